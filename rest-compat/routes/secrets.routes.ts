import { DeleteSecretDocument, ListSecretsDocument, SetSecretDocument } from '../generated/graphql';
import { AppError } from '../../src/common/errors';
import { body } from '../../src/http/http.rest';
import { route } from '../route';
import { arrayOf, isoTime, object, requestBody, string } from '../../src/http/openapi/json-schema';

const secretSchema = object({ name: string, created_at: isoTime, updated_at: isoTime });

const secretJson = (s: { name: string; createdAt: string; updatedAt: string }) => ({
  name: s.name,
  created_at: s.createdAt,
  updated_at: s.updatedAt,
});

/** The owner's named secrets (`/api/v1/secrets`): values go in, never out; see docs/secrets.md. */
export const secretRoutes = [
  route({
    method: 'get',
    path: '/api/v1/secrets',
    summary: "The owner's secrets: names and times, never values",
    response: arrayOf(secretSchema),
    document: ListSecretsDocument,
    variables: () => ({}),
    respond: ({ secrets }) => ({ status: 200, body: secrets.map(secretJson) }),
  }),
  route({
    method: 'put',
    path: '/api/v1/secrets/:name',
    summary: 'Create or replace a secret (the value is never answered)',
    request: requestBody({ value: { type: 'string', description: 'at most 64 KiB' } }, ['value']),
    response: secretSchema,
    document: SetSecretDocument,
    variables: (req) => {
      const value = body(req).value;
      // Checked here rather than by input coercion, whose message would repeat the value.
      if (typeof value !== 'string') throw AppError.validation({ value: 'is required, as a string' });
      return { name: String(req.params.name), value };
    },
    respond: ({ setSecret }) => ({ status: 200, body: secretJson(setSecret) }),
  }),
  route({
    method: 'delete',
    path: '/api/v1/secrets/:name',
    summary: 'Delete a secret',
    status: 204,
    document: DeleteSecretDocument,
    variables: (req) => ({ name: String(req.params.name) }),
    respond: () => ({ status: 204 }),
  }),
];
