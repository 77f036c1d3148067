import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * A handler of the lane: it answers every outcome itself (a rejection goes to `errors`). Stages
 * and handlers call `next()` or `next(err)`; `next('route')` and `next('router')` have no
 * meaning here and would be taken as errors.
 */
export type LaneHandler = (req: Request, res: Response) => unknown;

export interface LaneOptions {
  /** The method of these routes (default GET; a GET with a body goes the generic way). */
  method?: 'GET' | 'POST';
  /** Which requests of that method may take the lane at all (say, JSON bodies only). */
  admits?: (req: IncomingMessage) => boolean;
  /** The middlewares the generic stack runs before these routes, in the same order. */
  stages: RequestHandler[];
  /** Handlers by exact path (Express syntax without parameters: `/api/v1/media`). */
  routes: ReadonlyMap<string, LaneHandler>;
  /** The generic stack's final error handler. */
  errors: ErrorRequestHandler;
}

/** A request with a body goes the generic way (its body parser has a say in the answer). */
function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || req.headers['content-length'] !== undefined;
}

/** What Express sets up before its router runs (its `app.handle`), from an app's prototypes. */
interface ExpressApp {
  request: object;
  response: object;
}

/**
 * A shortcut for the busiest paths, in front of the Express app: the same middlewares and the
 * same handler as the generic stack, run as one fixed chain. Express otherwise matches every
 * request against each layer and sub-router before them (some forty, many of them regular
 * expressions), with its router's bookkeeping around each `next`. Answers false for anything
 * that is not exactly one of these paths with the lane's method (or a `GET` with a body, or a
 * request `admits` refuses), which the app then answers the generic way, the same. Stages keep
 * Express's contract: `next(err)` and a thrown or rejected error go to the error handler.
 */
export function fastLane(
  app: ExpressApp,
  { method = 'GET', admits, stages, routes, errors }: LaneOptions,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const noop = () => undefined;
  return (incoming, outgoing) => {
    if (incoming.method !== method || (method === 'GET' && hasBody(incoming))) return false;
    if (admits && !admits(incoming)) return false;
    const url = incoming.url ?? '';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const handler = routes.get(path);
    if (!handler) return false;
    // What Express's app and router set up (x-powered-by is off). Every property is added
    // before the prototypes change: V8 made each property added to a request or response after
    // `setPrototypeOf` cost microseconds (4 to 9 µs each in a microbenchmark, against well under
    // one before), so the ones added later on the lanes (the route, `next`, the body, parseurl's
    // cache of the URL) start here as undefined, as body-parser itself does with `body`.
    const req = incoming as Request & { _parsedUrl?: unknown; _eventsCount?: number };
    const res = outgoing as Response;
    req.res = res;
    res.req = req;
    res.locals = Object.create(null) as Response['locals'];
    req.originalUrl = url;
    req.baseUrl = '';
    req.params = {};
    req.route = undefined;
    req.body = undefined;
    req._parsedUrl = undefined;
    // Node keeps these on the prototypes until first written: the status (always 200 and no
    // message here, a fresh response) and the request's count of listeners.
    res.statusCode = 200;
    res.statusMessage = undefined as unknown as string;
    const listeners = req._eventsCount; // inherited (0) until the first listener
    req._eventsCount = listeners;
    const fail = (err: unknown) => {
      try {
        errors(err, req, res, noop);
      } catch {
        // Express's router would answer a failing error handler with finalhandler's 500.
        if (res.headersSent) res.destroy();
        else {
          res.statusCode = 500;
          res.end();
        }
      }
    };
    let i = 0;
    const step: NextFunction = (err?: unknown) => {
      if (err) return fail(err);
      try {
        let out: unknown;
        if (i < stages.length) out = stages[i++](req, res, step);
        else {
          // Only a request that reached its route is labelled by it in the metrics (as in Express:
          // one refused by a stage is counted `(unmatched)`).
          req.route = { path };
          out = handler(req, res);
        }
        if (out instanceof Promise) out.catch((e: unknown) => fail(e ?? new Error('Rejected promise')));
      } catch (e) {
        fail(e);
      }
    };
    req.next = step;
    Object.setPrototypeOf(req, app.request);
    Object.setPrototypeOf(res, app.response);
    step();
    return true;
  };
}
