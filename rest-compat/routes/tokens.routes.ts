import {
  CreateApiKeyDocument,
  CreateTeamDocument,
  ListApiKeysDocument,
  ListTeamsDocument,
  RevokeApiKeyDocument,
  type RestApiKeyFragment,
  type RestTeamFragment,
} from '../generated/graphql';
import { body, listResponse, optionalString, pageVariables } from '../rest.helpers';
import { route } from '../route';

const apiKeyJson = (k: RestApiKeyFragment) => ({
  id: k.id,
  name: k.name,
  team_id: k.teamId,
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
    document: CreateApiKeyDocument,
    variables: (req) => {
      const b = body(req);
      return { input: { name: b.name as string, teamId: optionalString(b, 'team_id') } };
    },
    respond: ({ createApiKey }) => ({
      status: 201,
      body: { ...apiKeyJson(createApiKey.apiKey), token: createApiKey.value },
    }),
  }),
  route({
    method: 'get',
    path: '/api/v1/tokens',
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
    document: RevokeApiKeyDocument,
    variables: (req) => ({ id: String(req.params.id) }),
    respond: () => ({ status: 204 }),
  }),
  route({
    method: 'post',
    path: '/api/v1/teams',
    document: CreateTeamDocument,
    variables: (req) => ({ input: { name: body(req).name as string } }),
    respond: ({ createTeam }) => ({ status: 201, body: teamJson(createTeam) }),
  }),
  route({
    method: 'get',
    path: '/api/v1/teams',
    document: ListTeamsDocument,
    variables: (req) => pageVariables(req),
    respond: ({ teams }, req) => listResponse(req, teams, teamJson),
  }),
];
