import { ApolloServer, type ApolloServerPlugin } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
} from '@apollo/server/plugin/disabled';
import { expressMiddleware } from '@as-integrations/express5';
import { ApolloArmor } from '@escape.tech/graphql-armor';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Request, RequestHandler, Response } from 'express';
import { GraphQLError, type ExecutionArgs, type GraphQLSchema, type ValidationRule } from 'graphql';
import type { Principal } from '../common/principal';
import { AppError } from '../common/errors';
import type { Logger } from '../common/logger';
import type { Config } from '../config';
import { PgDocumentCache } from '../documents/document.cache';
import type { IdempotentCreation } from '../common/idempotent-creation';
import type { RequestContext } from '../graphql/graphql.context';
import { DirectOperations } from '../graphql/graphql.direct';
import { formatGraphQLError, requestLevelStatus } from '../graphql/graphql.errors';
import { graphqlMultipart } from '../http/http.graphql-multipart';
import { tooDeep } from '../http/http.json-body';
import { compiledGateway, CompiledOperations } from '../graphql/graphql.executor';
import { inputProblems } from '../graphql/graphql.inputs';
import { Loaders } from '../graphql/graphql.loaders';
import type { LaneHandler } from '../http/http.lane';
import type { JobLive } from '../jobs/job.live';
import type { Metrics } from '../metrics/metrics';
import { graphqlMetrics, observeGraphQL } from '../metrics/metrics.http';
import type { Services } from './services';

/** The input rule of graphql.inputs.ts as an error of the request, answered 400. */
export function inputError(
  args: Pick<ExecutionArgs, 'schema' | 'document' | 'operationName' | 'variableValues'>,
) {
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
  readonly idempotency: IdempotentCreation | undefined;
  readonly [RESPONSE]: Response;

  constructor(
    private readonly req: Request,
    res: Response,
    private readonly baseLog: Logger,
    readonly live: JobLive,
  ) {
    this.requestId = res.locals.requestId as string;
    const principal = (res.locals.principal as Principal | null) ?? null;
    // Audit records name the request and the client address.
    this.principal = principal && {
      ...principal,
      origin: { requestId: this.requestId, clientAddress: req.ip ?? null },
    };
    this.idempotency = res.locals.idempotency as IdempotentCreation | undefined;
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

// Each HTTP context carries its response (Apollo copies contexts, symbols included), so the
// request's log line can name the operation.
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

export interface GraphqlServerDeps {
  config: Config;
  log: Logger;
  orm: MikroORM;
  services: Services;
  metrics: Metrics;
  schema: GraphQLSchema;
  /** The upload allowance a multipart request spends before its file is read. */
  uploadLimit: RequestHandler;
}

/** GraphQL over HTTP: Apollo, the direct answers, and what websockets share with them. */
export interface GraphqlServer {
  /** The context of an HTTP request (GraphQL and the REST layer alike). */
  contextOf(req: Request, res: Response): RequestContext;
  formatError: ReturnType<typeof formatGraphQLError>;
  /** The limits of graphql-armor, checked over every transport. */
  validationRules: ValidationRule[];
  /** `/graphql` in the generic stack: multipart uploads, the direct answer, Apollo. */
  handlers: RequestHandler[];
  /** `POST /graphql` with a JSON body on its lane: the direct answer of a known document, else Apollo. */
  laneHandler: LaneHandler;
  stop(): Promise<void>;
}

export async function startGraphqlServer({
  config,
  log,
  orm,
  services,
  metrics,
  schema,
  uploadLimit,
}: GraphqlServerDeps): Promise<GraphqlServer> {
  const contextOf = (req: Request, res: Response): RequestContext =>
    new HttpContext(req, res, log, services.live);
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
  const formatError = formatGraphQLError(log, config.nodeEnv === 'production');
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
  // GraphQL multipart requests (uploadMedia); bytes stream straight to the resolver, whose media
  // service enforces the file's size as it does for POST /uploads/upload.
  const graphqlUploads = graphqlMultipart({ maxFiles: 1, maxFieldSize: config.maxBodyBytes });
  const uploads: RequestHandler = (req, res, next) => {
    if (!req.is('multipart/form-data')) return next();
    // Refuse before reading a byte of a file nobody may upload.
    if (!res.locals.principal) return next(new AppError('UNAUTHENTICATED', 'authentication required'));
    uploadLimit(req, res, (err?: unknown) =>
      err ? next(err) : graphqlUploads(req, res, (e?: unknown) => next(e ?? tooDeep(req.body))),
    );
  };
  const apolloHandler = expressMiddleware(apollo, { context: async ({ req, res }) => contextOf(req, res) });
  return {
    contextOf,
    formatError,
    validationRules: armor.validationRules,
    handlers: [uploads, direct.handler, apolloHandler],
    // The lane's requests are JSON: the multipart stage would pass them on.
    laneHandler: (req, res) =>
      new Promise((resolve, reject) =>
        direct.handler(req, res, (err?: unknown) =>
          err ? reject(err) : resolve(apolloHandler(req, res, reject)),
        ),
      ),
    stop: () => apollo.stop(),
  };
}
