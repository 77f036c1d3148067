import { FetchMetadataDocument } from '../generated/graphql';
import { route } from '../route';
import { boolean, isoTime, object, string } from '../../src/http/openapi/json-schema';

/**
 * `GET /api/v1/fetch-metadata`: the Identity metadata object of the spec, from `me`. The principal
 * comes from the `auth_session` cookie (src/auth/login.routes.ts); the login endpoints themselves
 * are redirects and cookies, served by that router, not by GraphQL operations.
 * Absent strings are "" (the legacy answer's strings are never null).
 */
export const authRoutes = [
  route({
    method: 'get',
    path: '/api/v1/fetch-metadata',
    summary: 'Who the `auth_session` cookie of a login session belongs to',
    response: object({
      email: string,
      email_verified: boolean,
      username: string,
      phone_number: string,
      user_id: string,
      created_at: isoTime,
      updated_at: isoTime,
      name: string,
      nickname: string,
      picture: string,
    }),
    document: FetchMetadataDocument,
    variables: () => ({}),
    respond: ({ me }) => ({
      status: 200,
      body: {
        email: me.email ?? '',
        email_verified: me.emailVerified,
        username: me.username,
        phone_number: me.phoneNumber ?? '',
        user_id: me.userId,
        created_at: me.createdAt,
        updated_at: me.updatedAt,
        name: me.name ?? '',
        nickname: me.nickname ?? '',
        picture: me.picture ?? '',
      },
    }),
  }),
];
