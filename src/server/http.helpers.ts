import type { Request, Response } from 'express';
import { AppError, httpStatusOf, restErrorBody } from '../common/errors';

export const VERSIONED_JSON = 'application/service.rest.v1+json';

/** JSON in the type the client asked for: the versioned type when its Accept names it. */
export function sendJson(req: Request, res: Response, status: number, body: unknown): void {
  const type =
    req.accepts(['application/json', VERSIONED_JSON]) === VERSIONED_JSON
      ? VERSIONED_JSON
      : 'application/json';
  res.status(status).type(type).send(JSON.stringify(body));
}

export function sendError(req: Request, res: Response, error: AppError): void {
  if (error.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(error.retryAfterSeconds));
  sendJson(
    req,
    res,
    httpStatusOf(error.code),
    restErrorBody(error, res.locals.requestId as string | undefined),
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
