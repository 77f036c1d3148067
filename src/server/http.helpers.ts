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
