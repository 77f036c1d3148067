import { Router } from 'express';
import { openApiDocument } from '../../rest-compat/openapi';
import type { ApiDoc } from '../http/openapi/openapi.docs';
import { restRoutes } from '../../rest-compat/routes';
import { enumOf, object, string } from '../http/openapi/json-schema';
import { uploadDoc } from '../../rest-compat/upload.routes';
import { jobEventDocs } from '../../rest-compat/job-events.routes';
import { batchStreamDocs } from '../../rest-compat/batch-streams.routes';
import { loginDocs } from '../auth/login.routes';
import { chatBridgeDocs } from '../chat-bridge/chat-bridge.routes';
import type { Config } from '../config';
import { mediaFileDoc } from '../media/media.routes';
import { cdrDoc } from '../telephony/cdr.routes';

const serviceDocs: ApiDoc[] = [
  {
    method: 'get',
    path: '/',
    operationId: 'ServiceIndex',
    summary:
      'Where things are: the dashboard, GraphQL, this document, health; and the version. A browser gets the dashboard',
    tag: 'service',
    security: 'none',
    response: {
      type: 'object',
      properties: { service: string, version: string, links: { type: 'object' }, note: string },
      required: ['service', 'version', 'links'],
    },
  },
  {
    method: 'get',
    path: '/healthz',
    operationId: 'Health',
    summary: 'Answers while the process is alive',
    tag: 'service',
    security: 'none',
    response: object({ status: enumOf(['ok']) }),
  },
  {
    method: 'get',
    path: '/readyz',
    operationId: 'Ready',
    summary: 'Answers 200 while the database is reachable, 503 `UNAVAILABLE` otherwise',
    tag: 'service',
    security: 'none',
    response: object({ status: enumOf(['ready']) }),
  },
  {
    method: 'get',
    path: '/api/openapi.json',
    operationId: 'OpenApi',
    summary: 'This document',
    tag: 'service',
    security: 'none',
    response: {
      type: 'object',
      properties: { openapi: string, paths: { type: 'object' } },
      required: ['openapi', 'paths'],
    },
  },
];

/** Every documented path outside the route table. */
export const documentedPaths: ApiDoc[] = [
  ...serviceDocs,
  ...loginDocs,
  uploadDoc,
  mediaFileDoc,
  cdrDoc,
  ...chatBridgeDocs,
  ...jobEventDocs,
  ...batchStreamDocs,
];

/** `GET /api/openapi.json`: the document, built once. */
export function openApiRoutes(config: Config): Router {
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const document = JSON.stringify(
    openApiDocument({
      publicUrl: config.publicUrl,
      bridgeUrl: `http://${host}:${config.bridgePort}`,
      apiKeyHeader: config.apiKeyHeader,
      routes: restRoutes,
      others: documentedPaths,
    }),
  );
  const router = Router();
  router.get('/api/openapi.json', (_req, res) => {
    res.type('application/json').send(document);
  });
  return router;
}
