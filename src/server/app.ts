import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { ApolloServer, type ApolloServerPlugin } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
} from '@apollo/server/plugin/disabled';
import { expressMiddleware } from '@as-integrations/express5';
import { ApolloArmor } from '@escape.tech/graphql-armor';
import type { MikroORM } from '@mikro-orm/postgresql';
import express, { type NextFunction, type Request, type Response } from 'express';
import {
  execute,
  GraphQLError,
  specifiedRules,
  subscribe,
  validate,
  type ExecutionArgs,
  type GraphQLSchema,
} from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import { createRestRouter, restHandlers } from '../../rest-compat/router';
import { uploadRoutes } from '../../rest-compat/upload.route';
import { jobEventRoutes } from '../../rest-compat/job-events.route';
import { graphqlUploadExpress } from 'graphql-upload-minimal';
import { mediaFileRoutes } from '../media/media.http';
import { idempotentRequests } from '../idempotency/idempotency.http';
import { restRoutes } from '../../rest-compat/routes';
import type { Credentials } from '../auth/authenticator';
import { loginRoutes } from '../auth/login.routes';
import type { Principal } from '../auth/principal';
import type { Config } from '../config';
import { AppError } from '../common/errors';
import type { Logger } from '../common/logger';
import { PgDocumentCache } from '../documents/document.cache';
import type { RequestContext } from '../graphql/graphql.context';
import { cors } from '../http/http.cors';
import { fastLane } from '../http/http.lane';
import { plainJsonBodies } from '../http/http.json-body';
import { graphiqlRoutes } from './graphiql';
import { openApiRoutes } from './openapi.route';
import { compiledGateway, CompiledOperations } from '../graphql/graphql.executor';
import { DirectOperations, hasJsonBody } from '../graphql/graphql.direct';
import { formatGraphQLError, requestLevelStatus } from '../graphql/graphql.errors';
import { webAppRoutes } from './web-app';
import { Loaders } from '../graphql/graphql.loaders';
import type { JobLive } from '../jobs/job.live';
import {
  drain,
  errorResponses,
  jsonBodies,
  listen,
  noRoute,
  requestIds,
  requestLogs,
  sendError,
} from '../http/http.helpers';
import { inputProblems } from '../graphql/graphql.inputs';
import type { Metrics } from '../metrics/metrics';
import { graphqlMetrics, httpMetrics, observeGraphQL, subscriptionGauge } from '../metrics/metrics.http';
import { RequestLimits } from '../rate-limits/request-limits';
import { databaseAnswers } from '../db/orm';
import { buildAppSchema } from './schema';
import type { Services } from './services';

export interface AppDeps {
  config: Config;
  log: Logger;
  orm: MikroORM;
  services: Services;
  /** The process's metrics (docs/operations.md). */
  metrics: Metrics;
  /** Extra routers mounted before authentication (the development identity provider). */
  publicRoutes?: { path: string; router: express.Router }[];
}

export interface App {
  server: http.Server;
  /** The GraphQL schema the app serves, built with this process's services. */
  schema: GraphQLSchema;
  listen(port?: number, host?: string): Promise<number>;
  /** Stops accepting, lets in-flight requests finish (bounded), closes websockets. */
  close(): Promise<void>;
}

/** The input rule of graphql.inputs.ts as an error of the request, answered 400. */
function inputError(args: Pick<ExecutionArgs, 'schema' | 'document' | 'operationName' | 'variableValues'>) {
  const problem = inputProblems(args.schema, args.document, args.operationName, args.variableValues);
  return (
    problem &&
    new GraphQLError(problem.message, { originalError: problem, extensions: { http: { status: 400 } } })
  );
}

const inputsPlugin: ApolloServerPlugin<RequestContext> = {
  async requestDidStart() {
    return {
      async didResolveOperation({ schema, document, operationName, request }) {
        const error = inputError({ schema, document, operationName, variableValues: request.variables });
        if (error) throw error;
      },
    };
  },
};

const RESPONSE = Symbol('response');

/**
 * The context of an HTTP request. A class rather than an object literal: the literal's getter
 * and computed key were defined one by one on every request.
 */
class HttpContext implements RequestContext {
  readonly requestId: string;
  readonly principal: Principal | null;
  readonly loaders = new Loaders();
  readonly [RESPONSE]: Response;

  constructor(
    private readonly req: Request,
    res: Response,
    private readonly baseLog: Logger,
    readonly live: JobLive,
  ) {
    this.requestId = res.locals.requestId as string;
    const principal = (res.locals.principal as Principal | null) ?? null;
    // teams (issue 29): audit records name the request and the client address.
    this.principal = principal && {
      ...principal,
      origin: { requestId: this.requestId, clientAddress: req.ip ?? null },
    };
    this[RESPONSE] = res;
  }

  /** The request's logger is made only if a resolver logs. */
  get log(): Logger {
    return this.req.log ?? this.baseLog;
  }
}

/** Sets the HTTP status of a GraphQL answer that failed as a whole (Apollo would say 200 or 500). */
const statusPlugin: ApolloServerPlugin<RequestContext> = {
  async requestDidStart() {
    return {
      async willSendResponse({ response }) {
        if (response.body.kind !== 'single') return;
        const { errors, data } = response.body.singleResult;
        const failed = requestLevelStatus(errors, data);
        if (!failed) return;
        response.http.status = failed.status;
        if (failed.retryAfter !== undefined)
          response.http.headers.set('Retry-After', String(failed.retryAfter));
      },
    };
  },
};

/** The paths of a router's own routes (Express syntax). */
function routePaths(router: express.Router): string[] {
  return router.stack.flatMap((layer) => (layer.route ? [String(layer.route.path)] : []));
}

export async function createApp({
  config,
  log,
  orm,
  services,
  metrics,
  publicRoutes = [],
}: AppDeps): Promise<App> {
  const schema = buildAppSchema(services);
  const hideSuggestions = config.nodeEnv === 'production';
  const app = express();
  app.disable('x-powered-by');
  // API answers are not conditional GETs: hashing every body for an ETag was pure cost. (Files
  // under /media carry their SHA-256 as a strong ETag, set by their own route.)
  app.set('etag', false);
  app.set('trust proxy', 'loopback');
  // The lanes answer their paths in front of the app (assigned once the stack is built).
  type Lane = (req: http.IncomingMessage, res: http.ServerResponse) => boolean;
  let lanes: Lane[] = [];
  const server = http.createServer((req, res) => {
    for (const lane of lanes) if (lane(req, res)) return;
    void app(req, res);
  });

  // The stages every request passes first, also run by the lanes (below) in this order.
  const firstStages = [
    requestIds(),
    httpMetrics(metrics),
    requestLogs(log),
    cors(config.corsOrigins, [config.apiKeyHeader]),
  ];
  for (const stage of firstStages) app.use(stage);

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (req, res) => {
    if (await databaseAnswers(orm, Math.min(2000, config.databaseQueryTimeoutMs)))
      return void res.json({ status: 'ready' });
    sendError(req, res, new AppError('UNAVAILABLE', 'the database is unreachable', undefined, 5));
  });
  const openApi = openApiRoutes(config);
  app.use(openApi);
  for (const { path, router } of publicRoutes) app.use(path, router);
  // The CDN path: public like a bucket; ids are unguessable and only live files are served.
  app.use(mediaFileRoutes(services.media));
  if (config.graphqlIde) app.use(graphiqlRoutes());
  app.use(webAppRoutes({ dir: config.webDir, mediaOrigins: [new URL(config.cdnUrl).origin] }));

  // Plain UTF-8 JSON of a stated length is read in one step; anything else by body-parser.
  const bodies = plainJsonBodies(config.maxBodyBytes, jsonBodies(config.maxBodyBytes));
  app.use(bodies);

  // Each HTTP context carries its response (Apollo copies contexts, symbols included), so the
  // request's log line can name the operation.
  const contextOf = (req: Request, res: Response): RequestContext =>
    new HttpContext(req, res, log, services.live);
  const operationLogPlugin: ApolloServerPlugin<RequestContext> = {
    async requestDidStart() {
      return {
        async didResolveOperation({ contextValue, operationName, operation }) {
          const res = (contextValue as { [RESPONSE]?: Response })[RESPONSE];
          if (res) res.locals.graphqlOperation = operationName ?? operation?.name?.value ?? '(anonymous)';
        },
      };
    },
  };

  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join(',') : v);
  const credentialsOf = (headers: http.IncomingHttpHeaders): Credentials => ({
    authorization: one(headers.authorization),
    apiKey: one(headers[config.apiKeyHeader]),
  });

  // Every API request authenticates first: a bad credential is a 401, whatever the path.
  // A user token already verified (or no credential) is answered without a promise.
  const authenticate = (req: Request, res: Response, next: NextFunction) => {
    const credentials = credentialsOf(req.headers);
    const known = services.authenticator.known(credentials);
    if (known !== undefined) {
      res.locals.principal = known;
      return next();
    }
    return services.authenticator
      .authenticate(credentials)
      .then((principal) => {
        res.locals.principal = principal;
        next();
      })
      .catch(next);
  };
  // Then every request spends its principal's allowance (its address's when anonymous). The
  // lanes run this very list: a stage added here guards them too.
  const limits = new RequestLimits(orm, config, log);
  const apiStages = [authenticate, limits.requestMiddleware()];
  app.use(['/graphql', '/api', '/uploads'], ...apiStages);
  const uploadLimit = limits.uploadMiddleware();
  app.post('/uploads/upload', uploadLimit);
  // A repeated request (Idempotency-Key) still spends the allowance, but makes nothing new.
  const idempotency = idempotentRequests(services.idempotency, [
    '/api/v1/deployments',
    '/api/v1/tokens',
    '/graphql',
  ]);
  app.use(idempotency);

  const armor = new ApolloArmor({
    maxDepth: { n: 10 },
    maxAliases: { n: 15 },
    maxDirectives: { n: 20 },
    // Tokens are bounded by graphql-js's own parser option below, which Apollo answers with 400.
    maxTokens: { enabled: false },
    costLimit: { maxCost: 5000 },
    // Every suggestion (fields, types, enum values), over every transport: formatGraphQLError.
    blockFieldSuggestion: { enabled: false },
  }).protect();
  const operations = new CompiledOperations(schema);
  const formatError = formatGraphQLError(log, hideSuggestions);
  // Documents Apollo has resolved once are answered from Express directly (graphql.direct.ts).
  const direct = new DirectOperations({
    schema,
    operations,
    formatError,
    contextOf,
    observe: (name, type, failed, seconds) => observeGraphQL(metrics, name, type, failed, seconds),
  });
  const apollo = new ApolloServer<RequestContext>({
    // Apollo's executor hook: operations run compiled (graphql-jit), cached per parsed document.
    gateway: compiledGateway(schema, operations),
    introspection: config.graphqlIntrospection,
    allowBatchedHttpRequests: false,
    // main.ts owns the signals and drains HTTP before Apollo stops.
    stopOnTerminationSignals: false,
    parseOptions: { maxTokens: 2000 },
    // Automatic persisted queries: a client sends a document's SHA-256 instead of the document
    // once it is known, in any process of the service (the cache is PostgreSQL's).
    persistedQueries: { cache: new PgDocumentCache(orm), ttl: null },
    includeStacktraceInErrorResponses: false,
    validationRules: armor.validationRules,
    plugins: [
      ...armor.plugins,
      ApolloServerPluginLandingPageDisabled(),
      // The service sets no cache hints, and the default plugin wraps every field resolver to
      // look for them; no federation either (inline traces).
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginInlineTraceDisabled(),
      inputsPlugin,
      statusPlugin,
      operationLogPlugin,
      graphqlMetrics(metrics),
      direct.plugin,
    ],
    formatError,
  });
  await apollo.start();
  // GraphQL multipart requests (uploadMedia); bytes stream straight to the resolver.
  const graphqlUploads = graphqlUploadExpress({
    maxFiles: 1,
    maxFileSize: config.maxUploadBytes + 1,
    maxFieldSize: config.maxBodyBytes,
  });
  app.use('/graphql', (req, res, next) => {
    if (!req.is('multipart/form-data')) return next();
    // Refuse before reading a byte of a file nobody may upload.
    if (!res.locals.principal) return next(new AppError('UNAUTHENTICATED', 'authentication required'));
    uploadLimit(req, res, (err?: unknown) => (err ? next(err) : graphqlUploads(req, res, next)));
  });
  app.use('/graphql', direct.handler);
  const apolloHandler = expressMiddleware(apollo, { context: async ({ req, res }) => contextOf(req, res) });
  app.use('/graphql', apolloHandler);

  const login = loginRoutes(config, services);
  app.use(login);
  // Before the table: `/api/v1/jobs/events` is not a job id.
  const jobEvents = jobEventRoutes(services.jobs, services.history, services.bus);
  app.use(jobEvents);
  const rest = restHandlers({ schema, routes: restRoutes, contextOf });
  app.use(createRestRouter(rest));
  app.use(uploadRoutes(services.media, services.idempotency, { maxUploadBytes: config.maxUploadBytes }));

  app.use(noRoute());
  const errors = errorResponses(config.maxBodyBytes, log);
  app.use(errors);

  // The table's GET paths without parameters skip the walk through the stack above: the same
  // stages a GET without a body meets on its way there (the body parser and idempotency pass
  // such a request on), then the same handler (src/http/http.lane.ts). Paths a router before
  // the table serves (`/api/v1/fetch-metadata` first goes through the login routes) keep the
  // generic way: a router mounted before the table joins `claimed`.
  const claimed = new Set([openApi, login, jobEvents].flatMap(routePaths));
  const restLane = fastLane(app, {
    stages: [...firstStages, ...apiStages],
    routes: new Map(
      rest
        .filter(
          ({ route }) => route.method === 'get' && !route.path.includes(':') && !claimed.has(route.path),
        )
        .map(({ route, handle }) => [route.path, handle]),
    ),
    errors,
  });
  // `POST /graphql` with a JSON body of a stated length (what clients send), the same way: the
  // stages it meets in the generic stack (the multipart stage passes JSON on), then the direct
  // answer of a known document, else Apollo (whose handler answers everything itself). A chunked
  // body goes the generic way (tests compare both).
  const graphqlLane = fastLane(app, {
    method: 'POST',
    admits: (req) => req.headers['content-length'] !== undefined && hasJsonBody(req),
    stages: [...firstStages, bodies, ...apiStages, idempotency],
    routes: new Map([
      [
        '/graphql',
        (req: Request, res: Response) =>
          new Promise((resolve, reject) =>
            direct.handler(req, res, (err?: unknown) =>
              err ? reject(err) : resolve(apolloHandler(req, res, reject)),
            ),
          ),
      ],
    ]),
    errors,
  });
  lanes = [restLane, graphqlLane];

  // Subscriptions over graphql-ws on the same path; credentials come in connectionParams.
  const wss = new WebSocketServer({ server, path: '/graphql' });
  const subscriptions = subscriptionGauge(metrics);
  const wsCleanup = useServer<Record<string, unknown> | undefined, { principal?: Principal | null }>(
    {
      schema,
      // The same limits and error shapes as over HTTP.
      validate: (s, doc) => validate(s, doc, [...specifiedRules, ...armor.validationRules]),
      execute: (args) => {
        const error = inputError(args);
        return error ? { errors: [error] } : execute(args);
      },
      subscribe: (args) => {
        const error = inputError(args);
        return error ? { errors: [error] } : subscribe(args);
      },
      onError: (_ctx, _id, _payload, errors) => errors.map((e) => formatError(e.toJSON(), e)),
      onNext: (_ctx, _id, _payload, _args, result) =>
        result.errors
          ? { ...result, errors: result.errors.map((e) => formatError(e.toJSON(), e)) }
          : undefined,
      onOperation: (ctx, id, _payload, _args, result) => {
        if (Symbol.asyncIterator in Object(result)) subscriptions.opened(ctx, id);
      },
      onComplete: (ctx, id) => subscriptions.completed(ctx, id),
      // Each operation over a socket spends the allowance like a request does.
      onSubscribe: async (ctx) => {
        const refused = await limits.subscription(
          ctx.extra.principal ?? null,
          ctx.extra.request.socket.remoteAddress,
        );
        return refused ? [refused] : undefined;
      },
      onConnect: async (ctx) => {
        // Header names are case-insensitive; GraphiQL sends its headers pane as typed.
        const params = Object.fromEntries(
          Object.entries(ctx.connectionParams ?? {}).map(([k, v]) => [k.toLowerCase(), v]),
        );
        const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
        const credentials: Credentials = {
          authorization: str(params.authorization),
          apiKey: str(params[config.apiKeyHeader] ?? params.apikey),
        };
        try {
          ctx.extra.principal = await services.authenticator.authenticate(credentials);
        } catch {
          return false; // graphql-ws closes with 4403 Forbidden
        }
        if (!ctx.extra.principal) return true;
        // A connection lives long: a key revoked or a token expired since must end it too.
        const recheck = setInterval(() => {
          services.authenticator.authenticate(credentials).catch((err) => {
            if (err instanceof AppError && err.code === 'UNAUTHENTICATED')
              ctx.extra.socket.close(4403, 'Forbidden: the credential is no longer valid');
          });
        }, config.subscriptionAuthRecheckSeconds * 1000);
        recheck.unref();
        ctx.extra.socket.once('close', () => clearInterval(recheck));
        return true;
      },
      context: (ctx): RequestContext => {
        const requestId = randomUUID();
        const principal = ctx.extra.principal ?? null;
        return {
          requestId,
          // teams (issue 29): audit records name the operation and the client address.
          principal: principal && {
            ...principal,
            origin: { requestId, clientAddress: ctx.extra.request.socket.remoteAddress ?? null },
          },
          log,
          loaders: new Loaders(),
          live: services.live,
        };
      },
    },
    wss,
  );

  let closing: Promise<void> | undefined;
  return {
    server,
    schema,
    listen: (port = config.port, host = config.host) => listen(server, port, host),
    close: () =>
      (closing ??= (async () => {
        const drained = drain(server, config.shutdownTimeoutMs);
        for (const client of wss.clients) client.close(1001, 'server shutting down');
        await wsCleanup.dispose();
        await drained;
        await apollo.stop();
      })()),
  };
}
