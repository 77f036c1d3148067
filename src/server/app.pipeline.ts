import type { MikroORM } from '@mikro-orm/postgresql';
import { Router, type RequestHandler } from 'express';
import { jobEventRoutes } from '../../rest-compat/job-events.routes';
import { batchStreamRoutes } from '../../rest-compat/batch-streams.routes';
import { createRestRouter, type RestHandler } from '../../rest-compat/router';
import { uploadRoutes } from '../../rest-compat/upload.routes';
import { authenticatedRequests } from '../auth/auth.http';
import { loginRoutes } from '../auth/login.routes';
import { AppError } from '../common/errors';
import type { Logger } from '../common/logger';
import type { Config } from '../config';
import { databaseAnswers } from '../db/orm';
import { hasJsonBody } from '../graphql/graphql.direct';
import { cors } from '../http/http.cors';
import { jsonBodies, noRoute, requestIds, requestLogs, sendError } from '../http/http.helpers';
import { plainJsonBodies } from '../http/http.json-body';
import type { PipelineStep } from '../http/http.pipeline';
import { idempotentRequests } from '../idempotency/idempotency.http';
import { mediaFileRoutes } from '../media/media.routes';
import type { Metrics } from '../metrics/metrics';
import { httpMetrics } from '../metrics/metrics.http';
import type { RequestLimits } from '../rate-limits/request-limits';
import { graphiqlRoutes } from './graphiql';
import type { GraphqlServer } from './graphql.server';
import { openApiRoutes } from './openapi.routes';
import { serviceIndexRoutes } from './service-index.routes';
import type { Services } from './services';
import { webAppRoutes } from './web-app';

/** The paths of the API: each of their requests is authenticated and counted. */
const API_PATHS = ['/graphql', '/api', '/uploads'];

export interface PipelineParts {
  config: Config;
  log: Logger;
  orm: MikroORM;
  services: Services;
  metrics: Metrics;
  limits: RequestLimits;
  graphql: GraphqlServer;
  rest: RestHandler[];
  /** The upload allowance (`limits.uploadMiddleware()`), shared with GraphQL's multipart stage. */
  uploadLimit: RequestHandler;
  /** Routers mounted before authentication (the development identity provider, the CDR). */
  publicRoutes: { path: string; router: Router }[];
}

function healthRoutes(orm: MikroORM, config: Config): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (req, res) => {
    if (await databaseAnswers(orm, Math.min(2000, config.databaseQueryTimeoutMs)))
      return void res.json({ status: 'ready' });
    sendError(req, res, new AppError('UNAVAILABLE', 'the database is unreachable', undefined, 5));
  });
  return router;
}

/**
 * The HTTP pipeline, in the order a request meets it: the one list the Express app and both
 * lanes are built from (http/http.pipeline.ts). A stage runs on every lane after it unless its
 * paths, methods or body filter say its requests never take that lane; a new stage goes where
 * it must run, the lanes follow. docs/architecture.md, "The HTTP pipeline".
 */
export function appPipeline({
  config,
  log,
  orm,
  services,
  metrics,
  limits,
  graphql,
  rest,
  uploadLimit,
  publicRoutes,
}: PipelineParts): PipelineStep[] {
  return [
    { stage: 'request id', handle: requestIds() },
    { stage: 'metrics', handle: httpMetrics(metrics) },
    { stage: 'log', handle: requestLogs(log) },
    { stage: 'cors', handle: cors(config.corsOrigins, [config.apiKeyHeader]) },
    { routes: 'health', handle: healthRoutes(orm, config) },
    { routes: 'openapi', handle: openApiRoutes(config) },
    ...publicRoutes.map(({ path, router }) => ({ routes: `public ${path}`, path, handle: router })),
    // The CDN path: public like a bucket; ids are unguessable and only live files are served.
    { routes: 'media files', handle: mediaFileRoutes(services.media) },
    ...(config.graphqlIde ? [{ routes: 'graphiql', handle: graphiqlRoutes(config.apiKeyHeader) }] : []),
    {
      routes: 'web app',
      handle: webAppRoutes({ dir: config.webDir, mediaOrigins: [new URL(config.cdnUrl).origin] }),
    },
    // After the web app: a browser's `/` is the dashboard; anything else asking for `/` the index.
    { routes: 'service index', handle: serviceIndexRoutes(config) },
    // Plain UTF-8 JSON of a stated length is read in one step; anything else by body-parser.
    {
      stage: 'body',
      handle: plainJsonBodies(config.maxBodyBytes, jsonBodies(config.maxBodyBytes)),
      withBody: true,
    },
    // Every API request authenticates, then spends its principal's allowance (its address's when
    // anonymous).
    {
      stage: 'authenticate',
      handle: authenticatedRequests(services.authenticator, config.apiKeyHeader),
      paths: API_PATHS,
    },
    { stage: 'rate limit', handle: limits.requestMiddleware(), paths: API_PATHS },
    // A route that passes on, not a stage: it guards that exact path (no lane takes it).
    { routes: 'upload allowance', handle: Router().post('/uploads/upload', uploadLimit) },
    // A repeated request (Idempotency-Key) still spends the allowance, but makes nothing new.
    {
      stage: 'idempotency',
      handle: idempotentRequests(services.idempotency, ['/api/v1/deployments', '/api/v1/tokens', '/graphql']),
      methods: ['POST'],
    },
    // `POST /graphql` with a JSON body of a stated length (what clients send) takes its lane; a
    // chunked body or a multipart upload goes the generic way (tests compare both).
    {
      routes: 'graphql',
      path: '/graphql',
      handle: graphql.handlers,
      lane: {
        method: 'POST',
        admits: (req) => req.headers['content-length'] !== undefined && hasJsonBody(req),
        routes: new Map([['/graphql', graphql.laneHandler]]),
      },
    },
    { routes: 'login', handle: loginRoutes(config, services) },
    // Before the table: `/api/v1/jobs/events` is not a job id.
    { routes: 'job events', handle: jobEventRoutes(services.jobs, services.history, services.events) },
    { routes: 'batch streams', handle: batchStreamRoutes(services.batchResults, services.batchLive) },
    // The table's GET paths without parameters take the REST lane (docs/rest-compat.md).
    {
      routes: 'REST table',
      handle: createRestRouter(rest),
      lane: {
        routes: new Map(
          rest
            .filter(({ route }) => route.method === 'get' && !route.path.includes(':'))
            .map(({ route, handle }) => [route.path, handle]),
        ),
      },
    },
    {
      routes: 'uploads',
      handle: uploadRoutes(services.media, services.idempotency, { maxUploadBytes: config.maxUploadBytes }),
    },
    { routes: 'no route', handle: noRoute() },
  ];
}
