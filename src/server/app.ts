import http from 'node:http';
import type { MikroORM } from '@mikro-orm/postgresql';
import express from 'express';
import type { GraphQLSchema } from 'graphql';
import { restHandlers } from '../../rest-compat/router';
import { restRoutes } from '../../rest-compat/routes';
import type { Config } from '../config';
import type { Logger } from '../common/logger';
import { drain, errorResponses, listen } from '../http/http.helpers';
import { mountPipeline, type PipelineStep } from '../http/http.pipeline';
import type { Metrics } from '../metrics/metrics';
import { RequestLimits } from '../rate-limits/request-limits';
import { appPipeline } from './app.pipeline';
import { startGraphqlServer } from './graphql.server';
import { buildAppSchema } from './schema';
import type { Services } from './services';
import { graphqlWebSockets } from './websocket.server';

export interface AppDeps {
  config: Config;
  log: Logger;
  orm: MikroORM;
  services: Services;
  /** The process's metrics (docs/operations.md). */
  metrics: Metrics;
  /** Extra routers mounted before authentication (the development identity provider). */
  publicRoutes?: { path: string; router: express.Router }[];
  /** Changes the declared pipeline before it is built (tests add a stage). */
  editPipeline?: (steps: PipelineStep[]) => PipelineStep[];
}

export interface App {
  server: http.Server;
  /** The GraphQL schema the app serves, built with this process's services. */
  schema: GraphQLSchema;
  listen(port?: number, host?: string): Promise<number>;
  /** Stops accepting, lets in-flight requests finish (bounded), closes websockets. */
  close(): Promise<void>;
}

export async function createApp(deps: AppDeps): Promise<App> {
  const { config, log, orm, services, metrics, publicRoutes = [], editPipeline = (s) => s } = deps;
  const schema = buildAppSchema(services);
  const app = express();
  app.disable('x-powered-by');
  // API answers are not conditional GETs: hashing every body for an ETag was pure cost. (Files
  // under /media carry their SHA-256 as a strong ETag, set by their own route.)
  app.set('etag', false);
  app.set('trust proxy', 'loopback');

  const limits = new RequestLimits(orm, config, log);
  const uploadLimit = limits.uploadMiddleware();
  const graphql = await startGraphqlServer({ config, log, orm, services, metrics, schema, uploadLimit });
  const rest = restHandlers({ schema, routes: restRoutes, contextOf: graphql.contextOf });
  // The one list of stages and routes (app.pipeline.ts): the app and its lanes alike.
  const steps = appPipeline({
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
  });
  const lanes = mountPipeline(app, editPipeline(steps), errorResponses(config.maxBodyBytes, log));
  // The lanes answer their paths in front of the app.
  const server = http.createServer((req, res) => {
    for (const lane of lanes) if (lane(req, res)) return;
    void app(req, res);
  });
  const websockets = graphqlWebSockets(server, { config, log, services, metrics, schema, limits, graphql });

  let closing: Promise<void> | undefined;
  return {
    server,
    schema,
    listen: (port = config.port, host = config.host) => listen(server, port, host),
    close: () =>
      (closing ??= (async () => {
        const drained = drain(server, config.shutdownTimeoutMs);
        await websockets.close();
        await drained;
        await graphql.stop();
      })()),
  };
}
