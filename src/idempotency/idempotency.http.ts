import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ownerOf, type Principal } from '../common/principal';
import { AppError, toAppError } from '../common/errors';
import { sendError } from '../http/http.helpers';
import { fingerprint, IdempotencyService, type Claim, type StoredResponse } from './idempotency.service';

/** Headers of an answer that are replayed with it. */
const KEPT_HEADERS = ['content-type', 'location', 'link', 'preference-applied', 'vary'];

/** The `Idempotency-Key` of a request: undefined when absent, BAD_REQUEST when malformed. */
export function idempotencyKeyOf(req: Request): string | undefined {
  const key = req.get('idempotency-key');
  if (key === undefined) return undefined;
  if (!IdempotencyService.validKey(key))
    throw new AppError('BAD_REQUEST', 'Idempotency-Key must be 1 to 255 printable ASCII characters');
  return key;
}

/** Sends a stored answer again, marked as a replay. */
export function replay(res: Response, response: StoredResponse): void {
  for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value);
  res.setHeader('Idempotent-Replayed', 'true');
  res.status(response.status).end(Buffer.from(response.body, 'base64'));
}

/** A GraphQL answer with errors (HTTP 200 all the same): its operation did not all happen. */
function graphqlErrors(body: Buffer): boolean {
  if (body[0] !== 0x7b || !body.includes('"errors"')) return false;
  try {
    return Array.isArray((JSON.parse(body.toString('utf8')) as { errors?: unknown }).errors);
  } catch {
    return false;
  }
}

/**
 * Stores the answer this handler sends before it goes out (a 2xx without GraphQL errors:
 * something was made), or frees the key (nothing was made, the request may be repeated).
 */
export function storeAnswer(res: Response, claim: Claim, fp: string): void {
  const chunks: Buffer[] = [];
  const write = res.write.bind(res);
  const end = res.end.bind(res);
  res.write = ((chunk: unknown, ...rest: unknown[]) => {
    if (chunk) chunks.push(Buffer.from(chunk as string));
    return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
  }) as Response['write'];
  res.end = ((chunk?: unknown, ...rest: unknown[]) => {
    if (chunk && typeof chunk !== 'function') chunks.push(Buffer.from(chunk as string));
    const status = res.statusCode;
    const headers: Record<string, string> = {};
    for (const name of KEPT_HEADERS) {
      const v = res.getHeader(name);
      if (v !== undefined) headers[name] = String(v);
    }
    const body = Buffer.concat(chunks);
    const stored =
      status >= 200 && status < 300 && !graphqlErrors(body)
        ? claim.complete(fp, { status, headers, body: body.toString('base64') })
        : claim.release();
    void stored
      .catch((err) => res.req.log?.error({ err }, 'could not record an Idempotency-Key'))
      .finally(() => (end as (...a: unknown[]) => void)(chunk, ...rest));
    return res;
  }) as Response['end'];
}

/**
 * `Idempotency-Key` on JSON requests that create something: `POST /api/v1/deployments`,
 * `POST /api/v1/tokens` and GraphQL over HTTP. The fingerprint is the method, the path, the
 * canonical JSON body and `Cancel-After`; see docs/rest-compat.md.
 */
export function idempotentRequests(service: IdempotencyService, paths: readonly string[]): RequestHandler {
  const fail = (req: Request, res: Response, err: unknown) => {
    const { error, unexpected } = toAppError(err);
    if (unexpected) req.log?.error({ err }, 'unexpected error');
    sendError(req, res, error);
  };
  // A request without a key (nearly all) passes on at once, without a promise.
  return (req, res, next) => {
    let key: string | undefined;
    try {
      if (req.method !== 'POST' || req.headers['idempotency-key'] === undefined || !paths.includes(req.path))
        return next();
      key = idempotencyKeyOf(req);
    } catch (err) {
      return fail(req, res, err);
    }
    const principal = (res.locals.principal as Principal | null) ?? null;
    if (key === undefined || !principal) return next();
    return withKey(service, req, res, next, key, principal).catch((err: unknown) => fail(req, res, err));
  };
}

async function withKey(
  service: IdempotencyService,
  req: Request,
  res: Response,
  next: NextFunction,
  key: string,
  principal: Principal,
): Promise<void> {
  if (req.is('multipart/form-data'))
    throw new AppError(
      'BAD_REQUEST',
      'Idempotency-Key is taken on JSON requests here; uploads take it at POST /uploads/upload',
    );
  const fp = fingerprint([req.method, req.path, req.body ?? null, req.get('cancel-after') ?? null]);
  const begun = await service.begin(ownerOf(principal), key, fp);
  if (begun.kind === 'done') return replay(res, begun.response);
  // The services that make something record it under the key (RequestContext.idempotency).
  res.locals.idempotency = begun.claim.creation;
  // A repeat that answers what an earlier attempt made: not a new creation either.
  if (begun.claim.resumed) res.setHeader('Idempotent-Replayed', 'true');
  storeAnswer(res, begun.claim, fp);
  next();
}
