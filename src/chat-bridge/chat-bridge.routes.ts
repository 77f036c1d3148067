import { Router, type Request, type Response } from 'express';
import { body, listResponse, pageVariables } from '../http/http.rest';
import type { ApiDoc } from '../http/openapi/openapi.docs';
import {
  arrayOf,
  enumOf,
  integer,
  isoTime,
  message,
  nullable,
  object,
  requestBody,
  string,
  uuid,
} from '../http/openapi/json-schema';
import type { Page } from '../common/pagination';
import { sendJson } from '../http/http.helpers';
import type { DendriteInstance, Matterbridge } from './chat-bridge.entity';
import type { BridgeAccounts, BridgePrincipal } from './chat-bridge.accounts';
import type { ChatBridgeService, Supervised } from './chat-bridge.service';

/** Lists as JSON arrays with `limit`/`cursor` and a `Link` header, like the core REST lists. */
function sendPage<T>(req: Request, res: Response, page: Page<T>, item: (node: T) => unknown): void {
  const out = listResponse(
    req,
    { nodes: page.items, pageInfo: { hasNextPage: page.hasNextPage, endCursor: page.endCursor } },
    item,
  );
  for (const [k, v] of Object.entries(out.headers ?? {})) res.setHeader(k, v);
  sendJson(req, res, 200, out.body);
}

const dendriteItem = ({ row, status }: Supervised<DendriteInstance>) => ({
  id: row.id,
  hostname: row.hostname,
  port: row.port,
  key_id: row.keyId,
  public_key: row.publicKey,
  status,
  created_at: row.createdAt.toISOString(),
});

/** Never the token. */
const matterbridgeItem = ({ row, status }: Supervised<Matterbridge>) => ({
  id: row.id,
  name: row.name,
  network_name: row.networkName,
  platform: row.platform,
  channel: row.channel,
  server: row.settings.server ?? null,
  team: row.settings.team ?? null,
  nick: row.settings.nick ?? null,
  matrix_room_id: row.matrixRoomId,
  matrix_room_alias: row.matrixRoomAlias,
  status,
  created_at: row.createdAt.toISOString(),
});

const credentials = requestBody({ username: string, password: string }, ['username', 'password']);
const processStatus = enumOf(['running', 'restarting', 'failed', 'stopped', 'unmanaged']);

const bridgeDocs: ApiDoc[] = [
  {
    method: 'post',
    path: '/api/v1/matrix/user',
    operationId: 'CreateBridgeUser',
    summary: 'Create a chat bridge user on the homeserver; answers its api_key',
    security: 'none',
    request: credentials,
    status: 201,
    response: object({ api_key: string, Hostname: string }),
  },
  {
    method: 'post',
    path: '/api/v1/matrix/user/login',
    operationId: 'LoginBridgeUser',
    summary: 'Log a chat bridge user in (failed attempts are rate limited per user and address)',
    security: 'none',
    request: credentials,
    response: object({ api_key: string }),
  },
  {
    method: 'post',
    path: '/api/v1/matrix/dendrite',
    operationId: 'CreateDendrite',
    summary: 'Create a Dendrite homeserver instance',
    request: requestBody({ hostname: string, port: string }, ['hostname', 'port']),
    status: 201,
    response: message,
  },
  {
    method: 'get',
    path: '/api/v1/matrix/dendrite',
    operationId: 'ListDendrites',
    summary: 'Your Dendrite instances',
    paged: true,
    response: arrayOf(
      object({
        id: uuid,
        hostname: string,
        port: integer,
        key_id: string,
        public_key: string,
        status: processStatus,
        created_at: isoTime,
      }),
    ),
  },
  {
    method: 'delete',
    path: '/api/v1/matrix/dendrite/:id',
    operationId: 'DeleteDendrite',
    summary: 'Stop and remove a Dendrite instance',
    status: 204,
  },
  {
    method: 'post',
    path: '/api/v1/matrix/matterbridge',
    operationId: 'CreateMatterbridge',
    summary: 'Bridge a room to another chat platform',
    request: requestBody(
      {
        name: string,
        conf: requestBody(
          { platform: string, token: string, channel: string, server: string, team: string, nick: string },
          ['platform', 'token', 'channel'],
        ),
      },
      ['name', 'conf'],
    ),
    status: 201,
    response: object({ network_name: string, status: string }),
  },
  {
    method: 'get',
    path: '/api/v1/matrix/matterbridge',
    operationId: 'ListMatterbridges',
    summary: 'Your bridges (never their tokens)',
    paged: true,
    response: arrayOf(
      object({
        id: uuid,
        name: string,
        network_name: string,
        platform: string,
        channel: string,
        server: nullable(string),
        team: nullable(string),
        nick: nullable(string),
        matrix_room_id: string,
        matrix_room_alias: string,
        status: processStatus,
        created_at: isoTime,
      }),
    ),
  },
  {
    method: 'delete',
    path: '/api/v1/matrix/matterbridge/:id',
    operationId: 'DeleteMatterbridge',
    summary: 'Stop and remove a bridge',
    status: 204,
  },
];

/** The chat bridge's paths, for the OpenAPI document (served at `{bridge_url}`, its key by default). */
export const chatBridgeDocs = bridgeDocs.map((d): ApiDoc => ({
  ...d,
  bridge: true,
  security: d.security ?? 'bridge',
}));

/** The chat bridge API (`{bridge_url}`); every rule lives in the accounts and the service. */
export function chatBridgeRoutes(accounts: BridgeAccounts, service: ChatBridgeService): Router {
  const router = Router();
  const principal = (res: Response) => res.locals.bridgePrincipal as BridgePrincipal;

  router.post('/api/v1/matrix/user', async (req, res) => {
    const b = body(req);
    const { apiKey, hostname } = await accounts.createUser({ username: b.username, password: b.password });
    sendJson(req, res, 201, { api_key: apiKey, Hostname: hostname });
  });

  router.post('/api/v1/matrix/user/login', async (req, res) => {
    const b = body(req);
    const { apiKey } = await accounts.login({
      username: b.username,
      password: b.password,
      clientIp: req.ip ?? '',
    });
    sendJson(req, res, 200, { api_key: apiKey });
  });

  // Everything below acts for the user of the X-API-Key.
  router.use(['/api/v1/matrix/dendrite', '/api/v1/matrix/matterbridge'], async (req, res, next) => {
    res.locals.bridgePrincipal = await accounts.authenticate(req.get('x-api-key'));
    next();
  });

  router.post('/api/v1/matrix/dendrite', async (req, res) => {
    const b = body(req);
    await service.createDendrite(principal(res), { hostname: b.hostname, port: b.port });
    sendJson(req, res, 201, { message: 'success' });
  });
  router.get('/api/v1/matrix/dendrite', async (req, res) => {
    sendPage(req, res, await service.listDendrites(principal(res), pageVariables(req)), dendriteItem);
  });
  router.delete('/api/v1/matrix/dendrite/:id', async (req, res) => {
    await service.deleteDendrite(principal(res), req.params.id);
    res.status(204).end();
  });

  router.post('/api/v1/matrix/matterbridge', async (req, res) => {
    const b = body(req);
    const { row } = await service.createMatterbridge(principal(res), { name: b.name, conf: b.conf });
    sendJson(req, res, 201, { network_name: row.networkName, status: 'success' });
  });
  router.get('/api/v1/matrix/matterbridge', async (req, res) => {
    sendPage(req, res, await service.listMatterbridges(principal(res), pageVariables(req)), matterbridgeItem);
  });
  router.delete('/api/v1/matrix/matterbridge/:id', async (req, res) => {
    await service.deleteMatterbridge(principal(res), req.params.id);
    res.status(204).end();
  });

  return router;
}
