import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';

/** A handler of the lane: it answers every outcome itself (a rejection goes to `errors`). */
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
 * A shortcut for the busiest `GET` paths, in front of the Express app: the same middlewares and
 * the same handler as the generic stack, run as one fixed chain. Express otherwise matches every
 * request against each layer and sub-router before them (some forty, many of them regular
 * expressions), with its router's bookkeeping around each `next`. Answers false for anything
 * that is not exactly one of these paths (another method, a body, a trailing slash, other letter
 * case), which the app then answers the generic way, the same. Stages keep Express's contract:
 * `next(err)` and a thrown or rejected error go to the error handler.
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
    // What Express's app and router set up for a matched route (x-powered-by is off); the
    // metrics label a request by `req.route.path`.
    const req = Object.setPrototypeOf(incoming, app.request) as Request;
    const res = Object.setPrototypeOf(outgoing, app.response) as Response;
    req.res = res;
    res.req = req;
    res.locals = Object.create(null) as Response['locals'];
    req.originalUrl = url;
    req.baseUrl = '';
    req.params = {};
    req.route = { path };
    const fail = (err: unknown) => errors(err, req, res, noop);
    let i = 0;
    const step: NextFunction = (err?: unknown) => {
      if (err) return fail(err);
      try {
        const out = i < stages.length ? stages[i++](req, res, step) : handler(req, res);
        if (out instanceof Promise) out.catch((e: unknown) => fail(e ?? new Error('Rejected promise')));
      } catch (e) {
        fail(e);
      }
    };
    req.next = step;
    step();
    return true;
  };
}
