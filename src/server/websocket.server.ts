import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import { execute, GraphQLError, specifiedRules, validate, type GraphQLSchema } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import type { Credentials } from '../auth/authenticator';
import type { Principal } from '../common/principal';
import { AppError, isDatabaseUnavailable, toAppError } from '../common/errors';
import { nestsTooDeep, TOO_DEEP } from '../common/json-depth';
import type { Logger } from '../common/logger';
import type { Config } from '../config';
import type { RequestContext } from '../graphql/graphql.context';
import { Loaders } from '../graphql/graphql.loaders';
import { tooDeep } from '../http/http.json-body';
import type { Metrics } from '../metrics/metrics';
import { subscriptionGauge } from '../metrics/metrics.http';
import type { RequestLimits } from '../rate-limits/request-limits';
import { inputError, type GraphqlServer } from './graphql.server';
import type { Services } from './services';
import { SharedExecutions, type Target } from './websocket.shared';

export interface WebSocketDeps {
  config: Config;
  log: Logger;
  services: Services;
  metrics: Metrics;
  schema: GraphQLSchema;
  limits: RequestLimits;
  /** The HTTP side's limits and error formatting, which sockets share. */
  graphql: Pick<GraphqlServer, 'validationRules' | 'formatError'>;
}

/** What a socket keeps: its credential, and the principal it stood for at its last check. */
type SocketExtra = {
  principal?: Principal | null;
  credentials?: Credentials;
};

/**
 * Subscriptions over graphql-ws on the server's `/graphql`; credentials come in
 * connectionParams. A subscription's events are executed once per selection and audience and
 * written to the sockets here (SharedExecutions). `close` ends every socket (1001) and waits for
 * their operations.
 */
export function graphqlWebSockets(
  server: http.Server,
  {
    config,
    log,
    services,
    metrics,
    schema,
    limits,
    graphql: { validationRules, formatError },
  }: WebSocketDeps,
): { close(): Promise<void> } {
  const wss = new WebSocketServer({ server, path: '/graphql' });
  const subscriptions = subscriptionGauge(metrics);
  const shared = new SharedExecutions({
    maxBufferBytes: config.subscriptionMaxBufferBytes,
    tooSlow: () => metrics.subscriptionSocketsTooSlow.inc(),
    formatError: (e) => formatError(e.toJSON(), e),
  });
  /** Each operation's socket and id, by its context (graphql-ws hands `subscribe` only the latter). */
  const targets = new WeakMap<object, Target>();
  const cleanup = useServer<Record<string, unknown> | undefined, SocketExtra>(
    {
      schema,
      // The same limits and error shapes as over HTTP.
      validate: (s, doc) => validate(s, doc, [...specifiedRules, ...validationRules]),
      execute: (args) => {
        const error = inputError(args);
        return error ? { errors: [error] } : execute(args);
      },
      subscribe: (args) => {
        const error = inputError(args);
        return error
          ? { errors: [error] }
          : shared.subscribe(args, targets.get(args.contextValue as object)!);
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
      // Each operation over a socket spends the allowance like a request does. Its payload is
      // a body read: the same depth check first.
      onSubscribe: async (ctx, _id, payload) => {
        const deep = tooDeep(payload, 'payload');
        if (deep) return [new GraphQLError(deep.message, { originalError: deep })];
        // Each operation acts with the credential as it stands now (a team role changed, a
        // member removed, a key revoked since the socket opened), as an HTTP request would.
        if (ctx.extra.credentials) {
          try {
            ctx.extra.principal = await services.authenticator.authenticate(ctx.extra.credentials);
          } catch (err) {
            const { error } = toAppError(err);
            if (error.code === 'UNAUTHENTICATED')
              ctx.extra.socket.close(4403, 'Forbidden: the credential is no longer valid');
            return [new GraphQLError(error.message, { originalError: error })];
          }
        }
        const refused = await limits.subscription(
          ctx.extra.principal ?? null,
          ctx.extra.request.socket.remoteAddress,
        );
        return refused ? [refused] : undefined;
      },
      onConnect: async (ctx) => {
        if (nestsTooDeep(ctx.connectionParams)) {
          ctx.extra.socket.close(4400, `connection parameters ${TOO_DEEP}`);
          return false;
        }
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
        } catch (err) {
          // An outage is not a refusal: 1013 tells the client to try again later.
          if (isDatabaseUnavailable(err))
            ctx.extra.socket.close(1013, 'Try Again Later: the database is unavailable');
          return false; // graphql-ws closes with 4403 Forbidden
        }
        if (!ctx.extra.principal) return true;
        ctx.extra.credentials = credentials;
        // A connection lives long: a key revoked or a token expired since must end it too.
        const recheck = setInterval(() => {
          services.authenticator.authenticate(credentials).then(
            (principal) => (ctx.extra.principal = principal),
            (err) => {
              if (err instanceof AppError && err.code === 'UNAUTHENTICATED')
                ctx.extra.socket.close(4403, 'Forbidden: the credential is no longer valid');
            },
          );
        }, config.subscriptionAuthRecheckSeconds * 1000);
        recheck.unref();
        ctx.extra.socket.once('close', () => clearInterval(recheck));
        return true;
      },
      context: (ctx, id): RequestContext => {
        const requestId = randomUUID();
        const principal = ctx.extra.principal ?? null;
        const context: RequestContext = {
          requestId,
          // Audit records name the operation and the client address.
          principal: principal && {
            ...principal,
            origin: { requestId, clientAddress: ctx.extra.request.socket.remoteAddress ?? null },
          },
          log,
          loaders: new Loaders(),
          live: services.live,
          batchLive: services.batchLive,
        };
        targets.set(context, { socket: ctx.extra.socket, id });
        return context;
      },
    },
    wss,
  );
  return {
    close: async () => {
      for (const client of wss.clients) client.close(1001, 'server shutting down');
      await cleanup.dispose();
    },
  };
}
