import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler, type Request, type RequestHandler, type Response } from 'express';
import pinoHttp from 'pino-http';
import { AppError, graphqlErrorExtensions, httpStatusOf, restErrorBody, toAppError } from '../common/errors';
import { redactUrl, type Logger } from '../common/logger';
import { tooDeep } from './http.json-body';
import type { Principal } from '../common/principal';

export const VERSIONED_JSON = 'application/service.rest.v1+json';

const JSON_TYPES = ['application/json', 'application/*+json'];
const REQUEST_ID = /^[\w.:-]{1,128}$/;

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
const VERSIONED_CONTENT_TYPE = `${VERSIONED_JSON}; charset=utf-8`;
/** The answer's type by Accept header: clients send the same few values again and again. */
const typeByAccept = new Map<string, string>();

function jsonContentType(req: Request): string {
  const accept = req.headers.accept;
  if (accept === undefined) return JSON_CONTENT_TYPE;
  let type = typeByAccept.get(accept);
  if (type === undefined) {
    type =
      req.accepts(['application/json', VERSIONED_JSON]) === VERSIONED_JSON
        ? VERSIONED_CONTENT_TYPE
        : JSON_CONTENT_TYPE;
    if (typeByAccept.size >= 256) typeByAccept.clear();
    typeByAccept.set(accept, type);
  }
  return type;
}

/**
 * JSON in the type the client asked for: the versioned type when its Accept names it, with the
 * headers Express's `send` would set (no ETag, no freshness: API answers are not conditional).
 */
export function sendJson(req: Request, res: Response, status: number, body: unknown): void {
  writeText(res, status, 'Content-Type', jsonContentType(req), JSON.stringify(body));
}

/**
 * Ends a response with a text body and its length. The text goes out as a Buffer encoded once:
 * a string body is prepended with the head by Node (`head + body`, a rope), which the socket's
 * write then copies flat on the JavaScript heap before encoding it, a second body-sized
 * allocation per answer (and a third when `suffix` is appended to the text). The Buffer's
 * memory is outside the heap, and head and body still leave in one `writev`.
 */
export function writeText(
  res: http.ServerResponse,
  status: number,
  typeHeader: 'Content-Type' | 'content-type',
  type: string,
  text: string,
  suffix?: string,
): void {
  const length = Buffer.byteLength(text);
  const body = Buffer.allocUnsafe(suffix === undefined ? length : length + Buffer.byteLength(suffix));
  body.write(text, 0, length, 'utf8');
  if (suffix !== undefined) body.write(suffix, length, 'utf8');
  res.statusCode = status;
  res.setHeader(typeHeader, type);
  res.setHeader(typeHeader === 'Content-Type' ? 'Content-Length' : 'content-length', String(body.length));
  res.end(body);
}

export function sendError(req: Request, res: Response, error: AppError): void {
  if (error.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(error.retryAfterSeconds));
  if (error.headers) res.set(error.headers);
  const requestId = res.locals.requestId as string | undefined;
  const body = restErrorBody(error, requestId);
  // Refused before GraphQL ran (authentication, rate limits, an unavailable database): GraphQL
  // clients find the code where they look for it too, in a request error's extensions.
  const graphql = req.originalUrl.split('?')[0] === '/graphql';
  sendJson(
    req,
    res,
    httpStatusOf(error.code),
    graphql
      ? {
          ...body,
          errors: [{ message: error.message, extensions: graphqlErrorExtensions(error, requestId) }],
        }
      : body,
  );
}

/** The value of one cookie of the request, or undefined (no cookie-parsing middleware needed). */
export function readCookie(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** A request id (the client's `X-Request-Id` when well formed) in `res.locals` and the response. */
export function requestIds(): RequestHandler {
  return (req, res, next) => {
    const incoming = req.headers['x-request-id'];
    const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.locals.requestId = id;
    res.setHeader('X-Request-Id', id);
    next();
  };
}

/** A request's child logger, once made. */
const REQUEST_LOG = Symbol('request log');

/**
 * `req.log` above `info`: the request's child logger, made on first use, as a getter of the
 * app's request prototype. Defined on each request, it cost a new accessor and map every time
 * (and any property added to a request after Express changes its prototype is slow in V8).
 * Assigning `req.log` (pino-http does at `info`) makes it a plain property of that request.
 */
function defineRequestLog(proto: object, log: Logger): void {
  Object.defineProperty(proto, 'log', {
    configurable: true,
    get(this: Request & { [REQUEST_LOG]?: Logger }) {
      return (this[REQUEST_LOG] ??= log.child({ reqId: this.res?.locals.requestId as unknown }));
    },
    set(this: object, value: unknown) {
      Object.defineProperty(this, 'log', { value, writable: true, enumerable: true, configurable: true });
    },
  });
}

/**
 * JSON request logs carrying the request id, and once known the principal and the GraphQL
 * operation (`res.locals.graphqlOperation`); secret query values are redacted, the query and
 * path parameters not repeated. Health probes are not logged. Above `info` (where pino-http
 * would log only failed requests) the per-request logger and its serialisers cost more than the
 * request: `req.log` is then made on first use, and only 5xx answers are logged.
 */
export function requestLogs(log: Logger): RequestHandler {
  if (!log.isLevelEnabled('info')) {
    // One listener for every request (`this` is the response), no closure per request.
    function logFailure(this: Response) {
      if (this.statusCode < 500) return;
      const req = this.req;
      req.log.error(
        {
          req: { method: req.method, url: redactUrl(req.originalUrl) },
          res: { statusCode: this.statusCode },
        },
        'request errored',
      );
    }
    let defined: object | undefined;
    return (req, res, next) => {
      // The app's request prototype (Express's `app.request`), the same for all its requests.
      const proto = Object.getPrototypeOf(req) as object;
      if (proto !== defined) defineRequestLog((defined = proto), log);
      res.on('finish', logFailure);
      next();
    };
  }
  return pinoHttp({
    logger: log,
    genReqId: (_req, res) => res.locals?.requestId ?? randomUUID(),
    autoLogging: { ignore: (req) => req.url === '/healthz' || req.url === '/readyz' },
    serializers: {
      req: (req: { url?: string; query?: unknown; params?: unknown }) => {
        const { query: _query, params: _params, ...rest } = req;
        return { ...rest, url: redactUrl(req.url ?? '') };
      },
    },
    customProps: (_req, res) => {
      const locals = (res as Response).locals ?? {};
      const principal = locals.principal as Principal | null | undefined;
      return {
        ...(principal ? { principal: principalOf(principal) } : {}),
        ...(locals.graphqlOperation ? { operation: locals.graphqlOperation as string } : {}),
      };
    },
  });
}

/** Who a request acted as, for its log line: ids only. */
function principalOf(p: Principal) {
  return {
    userId: p.user.id,
    ...(p.team ? { teamId: p.team.id } : {}),
    ...(p.apiKeyId ? { apiKeyId: p.apiKeyId } : {}),
    credential: p.credential,
  };
}

/** Parses JSON bodies (both accepted content types) up to `maxBodyBytes` and MAX_JSON_DEPTH. */
export function jsonBodies(maxBodyBytes: number): RequestHandler {
  const parse = express.json({ limit: maxBodyBytes, type: JSON_TYPES });
  return (req, res, next) => parse(req, res, (err?: unknown) => next(err ?? tooDeep(req.body)));
}

export function noRoute(): RequestHandler {
  return (req, res) => {
    res.locals.unmatched = true; // metrics label it so, whatever route passed it on
    sendError(req, res, new AppError('NOT_FOUND', `no route for ${req.method} ${req.path}`));
  };
}

/** The last handler: body-parser failures become 400/413/415, anything unknown INTERNAL (logged). */
export function errorResponses(maxBodyBytes: number, log: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    const e = err as { type?: string; status?: number };
    let error: AppError;
    if (e?.type === 'entity.parse.failed') error = new AppError('BAD_REQUEST', 'the body is not valid JSON');
    else if (e?.type === 'entity.too.large')
      error = new AppError('PAYLOAD_TOO_LARGE', `the body is larger than ${maxBodyBytes} bytes`);
    else if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported')
      error = new AppError('UNSUPPORTED_MEDIA_TYPE', 'unsupported body encoding');
    else if (e?.status === 413) error = new AppError('PAYLOAD_TOO_LARGE', (err as Error).message);
    else if (e?.status && e.status >= 400 && e.status < 500)
      error = new AppError('BAD_REQUEST', 'malformed request');
    else {
      const mapped = toAppError(err);
      if (mapped.unexpected) (req.log ?? log).error({ err }, 'unexpected error');
      error = mapped.error;
    }
    if (res.headersSent) return res.end();
    sendError(req, res, error);
  };
}

/**
 * Idle keep-alive connections are kept longer than proxies and clients keep theirs (nginx 60 s,
 * load balancers 60 s, undici 4 s): Node's 5 s default let a client reuse a socket in the instant
 * the server closed it, and the request was reset.
 */
const KEEP_ALIVE_MS = 65_000;

export function listen(server: http.Server, port: number, host: string): Promise<number> {
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  server.headersTimeout = KEEP_ALIVE_MS + 1_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
  });
}

/**
 * Stops accepting and resolves once every connection is gone: idle keep-alive sockets are closed
 * at once (they would hold close() open), busy ones after their request, all after `timeoutMs`.
 */
export function drain(server: http.Server, timeoutMs: number): Promise<void> {
  const done = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const idleSweep = setInterval(() => server.closeIdleConnections(), 100);
  const deadline = setTimeout(() => server.closeAllConnections(), timeoutMs);
  return done.finally(() => {
    clearInterval(idleSweep);
    clearTimeout(deadline);
  });
}
