import type { RequestHandler } from 'express';
import { AppError } from '../common/errors';
import { sendError } from './http.helpers';

/** What browsers may read of an answer besides the basics. */
const EXPOSED = [
  'Link',
  'Retry-After',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'RateLimit-Policy',
  'X-Request-Id',
  'Content-Range',
  'ETag',
  // issue 18: Idempotency-Key and Prefer: wait
  'Idempotent-Replayed',
  'Preference-Applied',
].join(', ');

/**
 * CORS for the origins of `CORS_ORIGINS`: exact origins get their own origin back and may send
 * credentials (the session cookie); `*` lets any origin in, never with credentials. A preflight
 * from another origin is refused with 403; its plain requests go on without CORS headers, so
 * browsers keep the answers from it.
 */
export function cors(origins: readonly string[], credentialHeaders: string[]): RequestHandler {
  const exact = new Set(origins.filter((o) => o !== '*'));
  const anyOrigin = origins.includes('*');
  const allowHeaders = [
    ...new Set([
      'authorization',
      ...credentialHeaders,
      'content-type',
      'apollo-require-preflight',
      'x-request-id',
      // issue 18: repeated requests, synchronous runs, deadlines, resumed event streams
      'idempotency-key',
      'prefer',
      'cancel-after',
      'last-event-id',
    ]),
  ].join(', ');
  return (req, res, next) => {
    const origin = req.headers.origin;
    if (!origin) return next();
    res.vary('Origin');
    const preflight = req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined;
    if (exact.has(origin)) {
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Access-Control-Allow-Credentials', 'true');
    } else if (anyOrigin) {
      res.setHeader('Access-Control-Allow-Origin', '*');
    } else {
      if (!preflight) return next();
      return sendError(
        req,
        res,
        new AppError('FORBIDDEN', `the origin ${origin} may not call this API (CORS_ORIGINS)`),
      );
    }
    res.setHeader('Access-Control-Expose-Headers', EXPOSED);
    if (!preflight) return next();
    res.setHeader('Access-Control-Allow-Methods', 'GET, HEAD, POST, PUT, PATCH, DELETE');
    res.setHeader('Access-Control-Allow-Headers', allowHeaders);
    res.setHeader('Access-Control-Max-Age', '600');
    res.status(204).end();
  };
}
