import {
  CreateApiKeyDocument,
  CreateTeamDocument,
  ListApiKeysDocument,
  ListTeamsDocument,
  RevokeApiKeyDocument,
  type RestApiKeyFragment,
  type RestTeamFragment,
} from '../generated/graphql';
import { body, listResponse, optionalString, pageVariables } from '../../src/http/http.rest';
import { idempotency } from '../../src/http/openapi/openapi.docs';
import { route } from '../route';
import {
  arrayOf,
  enumOf,
  isoTime,
  nullable,
  object,
  requestBody,
  string,
  uuid,
} from '../../src/http/openapi/json-schema';

const apiKeyFields = {
  id: uuid,
  name: string,
  team_id: nullable(uuid),
  role: nullable(enumOf(['member', 'viewer'])),
  created_by: object({ user_id: uuid, username: nullable(string) }),
  created_at: isoTime,
  last_used_at: nullable(isoTime),
  revoked_at: nullable(isoTime),
};
const apiKeySchema = object(apiKeyFields);
const teamSchema = object({
  id: uuid,
  name: string,
  role: enumOf(['viewer', 'member', 'admin', 'owner']),
  created_at: isoTime,
});

const apiKeyJson = (k: RestApiKeyFragment) => ({
  id: k.id,
  name: k.name,
  team_id: k.teamId,
  role: k.role,
  created_by: { user_id: k.createdById, username: k.createdByUsername },
  created_at: k.createdAt,
  last_used_at: k.lastUsedAt,
  revoked_at: k.revokedAt,
});

const teamJson = (t: RestTeamFragment) => ({
  id: t.id,
  name: t.name,
  role: t.role.toLowerCase(),
  created_at: t.createdAt,
});

/** API keys (`/api/v1/tokens`) and teams (`/api/v1/teams`); see docs/rest-compat.md. */
export const tokenRoutes = [
  route({
    method: 'post',
    path: '/api/v1/tokens',
    summary:
      "Create an API key (with `team_id`: the team's organisation token); its value is shown only here",
    request: requestBody({ name: string, team_id: uuid, role: enumOf(['member', 'viewer']) }, ['name']),
    ...idempotency,
    status: 201,
    response: object({ ...apiKeyFields, token: uuid }),
    document: CreateApiKeyDocument,
    variables: (req) => {
      const b = body(req);
      return {
        input: {
          name: b.name as string,
          teamId: optionalString(b, 'team_id'),
          role: optionalString(b, 'role'),
        },
      };
    },
    respond: ({ createApiKey }) => ({
      status: 201,
      body: { ...apiKeyJson(createApiKey.apiKey), token: createApiKey.value },
    }),
  }),
  route({
    method: 'get',
    path: '/api/v1/tokens',
    summary: 'List API keys (with `team_id`: a team of yours)',
    paged: true,
    query: { team_id: { description: 'a team you administer', schema: uuid } },
    response: arrayOf(apiKeySchema),
    document: ListApiKeysDocument,
    variables: (req) => ({
      ...pageVariables(req),
      teamId: typeof req.query.team_id === 'string' ? req.query.team_id : undefined,
    }),
    respond: ({ apiKeys }, req) => listResponse(req, apiKeys, apiKeyJson),
  }),
  route({
    method: 'delete',
    path: '/api/v1/tokens/:id',
    summary: 'Revoke an API key at once',
    status: 204,
    document: RevokeApiKeyDocument,
    variables: (req) => ({ id: String(req.params.id) }),
    respond: () => ({ status: 204 }),
  }),
  route({
    method: 'post',
    path: '/api/v1/teams',
    summary: 'Create a team (an organisation); you are its owner',
    request: requestBody({ name: string }, ['name']),
    status: 201,
    response: teamSchema,
    document: CreateTeamDocument,
    variables: (req) => ({ input: { name: body(req).name as string } }),
    respond: ({ createTeam }) => ({ status: 201, body: teamJson(createTeam) }),
  }),
  route({
    method: 'get',
    path: '/api/v1/teams',
    summary: 'List your teams',
    paged: true,
    response: arrayOf(teamSchema),
    document: ListTeamsDocument,
    variables: (req) => pageVariables(req),
    respond: ({ teams }, req) => listResponse(req, teams, teamJson),
  }),
];
