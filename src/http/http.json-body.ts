import type { RequestHandler } from 'express';
import { AppError } from '../common/errors';
import { nestsTooDeep, TOO_DEEP } from '../common/json-depth';

const PLAIN_JSON = /^application\/json\s*(;\s*charset=utf-8\s*)?$/i;

/** An error the app's error handler reads as body-parser's (by `status` and `type`). */
function bodyError(status: number, type: string, message: string): Error {
  return Object.assign(new Error(message), { status, type });
}

/**
 * The one depth check of a JSON body, where it is read (both readers, and the multipart
 * `operations` of GraphQL): whatever walks it later may recurse.
 */
export function tooDeep(body: unknown, name = 'body'): AppError | undefined {
  return nestsTooDeep(body) ? AppError.validation({ [name]: TOO_DEEP }) : undefined;
}

/**
 * The common case of a JSON body read without body-parser's general machinery (content-type
 * and charset parsing, raw-body's stream bookkeeping, iconv): `application/json` in UTF-8, not
 * compressed, of a stated length within the limit. It reads as body-parser's `json()` with
 * `strict` does (a BOM dropped, only an object or an array at the top) and fails with the same
 * error types and statuses, which the error handler answers by (the messages differ); any other
 * request goes to `fallback`, the full parser.
 */
export function plainJsonBodies(maxBodyBytes: number, fallback: RequestHandler): RequestHandler {
  return (req, res, next) => {
    const length = Number(req.headers['content-length']);
    const encoding = req.headers['content-encoding'];
    if (
      !(length > 0 && length <= maxBodyBytes) ||
      (encoding !== undefined && encoding.toLowerCase() !== 'identity') ||
      !PLAIN_JSON.test(req.headers['content-type'] ?? '') ||
      req.readableEnded ||
      req.destroyed
    )
      return fallback(req, res, next);
    const chunks: Buffer[] = [];
    let received = 0;
    const done = (err?: Error) => {
      req.off('data', onData).off('end', onEnd).off('error', onError).off('aborted', onAborted);
      next(err);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      chunks.push(chunk);
    };
    const onEnd = () => {
      if (received !== length)
        return done(bodyError(400, 'request.size.invalid', 'request size did not match content length'));
      let text = (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received)).toString('utf8');
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      if (!text) {
        req.body = {};
        return done();
      }
      const first = /[^ \t\n\r]/.exec(text)?.[0];
      if (first !== '{' && first !== '[')
        return done(bodyError(400, 'entity.parse.failed', 'a JSON body is an object or an array'));
      try {
        req.body = JSON.parse(text) as unknown;
      } catch (err) {
        return done(bodyError(400, 'entity.parse.failed', (err as Error).message));
      }
      done(tooDeep(req.body));
    };
    const onError = (err: Error) => done(bodyError(400, 'request.aborted', err.message));
    const onAborted = () => done(bodyError(400, 'request.aborted', 'request aborted'));
    req.on('data', onData).on('end', onEnd).on('error', onError).on('aborted', onAborted);
  };
}
