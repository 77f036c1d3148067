import type { ApolloServerPlugin } from '@apollo/server';
import type { RequestHandler } from 'express';
import type { Metrics } from './metrics';

/** Status labels by code, made once. */
const statusLabels: string[] = [];

/** Request durations by route pattern (`/api/v1/models/:id`), never by raw path. */
export function httpMetrics(metrics: Metrics): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    // `on`, not `once`: 'finish' comes once, and `once` wraps every listener in two more objects.
    res.on('finish', () => {
      // A route that passed the request on (the web app's fallback) did not answer it.
      const matched = !res.locals.unmatched;
      const route =
        matched && req.route?.path
          ? `${req.baseUrl}${String(req.route.path)}`
          : (matched && req.baseUrl) || '(unmatched)';
      const code = res.statusCode;
      metrics.httpDuration.observe(
        { method: req.method, route, status: (statusLabels[code] ??= String(code)) },
        (performance.now() - started) / 1000,
      );
    });
    next();
  };
}

/** GraphQL operation durations over HTTP, by operation name, type and outcome. */
export function graphqlMetrics(metrics: Metrics): ApolloServerPlugin {
  return {
    async requestDidStart() {
      const started = performance.now();
      return {
        async willSendResponse({ operation, operationName, response }) {
          const failed =
            response.body.kind === 'single' ? !!response.body.singleResult.errors?.length : false;
          observeGraphQL(
            metrics,
            operationName ?? operation?.name?.value,
            operation?.operation ?? 'invalid',
            failed,
            (performance.now() - started) / 1000,
          );
        },
      };
    },
  };
}

export function observeGraphQL(
  metrics: Metrics,
  name: string | null | undefined,
  type: string,
  failed: boolean,
  seconds: number,
): void {
  metrics.graphqlDuration.observe(
    { operation: metrics.operationLabel(name), type, outcome: failed ? 'error' : 'success' },
    seconds,
  );
}

/** Open subscriptions of graphql-ws sockets: counted when one starts, until it completes. */
export function subscriptionGauge(metrics: Metrics) {
  const open = new WeakMap<object, Set<string>>();
  return {
    opened(ctx: object, id: string): void {
      const ids = open.get(ctx) ?? new Set<string>();
      open.set(ctx, ids.add(id));
      metrics.subscriptionsOpen.inc();
    },
    completed(ctx: object, id: string): void {
      if (open.get(ctx)?.delete(id)) metrics.subscriptionsOpen.dec();
    },
  };
}
