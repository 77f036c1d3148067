import type { Request } from 'express';
import { AppError, type ErrorDetails } from '../src/common/errors';
import { checkText } from '../src/common/text';
import type { RestResponse } from './route';

/** The JSON object body of a request, or 400. */
export function body(req: Request): Record<string, unknown> {
  const b: unknown = req.body;
  if (b === undefined) {
    if (req.headers['content-type']) {
      throw new AppError(
        'UNSUPPORTED_MEDIA_TYPE',
        'send application/json or application/service.rest.v1+json',
      );
    }
    throw new AppError('BAD_REQUEST', 'a JSON body is required');
  }
  if (typeof b !== 'object' || b === null || Array.isArray(b))
    throw new AppError('BAD_REQUEST', 'the JSON body must be an object');
  // The rule of every string input (src/server/graphql.inputs.ts), here with the legacy names.
  const details: ErrorDetails = {};
  checkText(b, [], (path, problem) => (details[path.join('.')] ??= problem));
  if (Object.keys(details).length) throw AppError.validation(details);
  return b as Record<string, unknown>;
}

/** A query parameter given at most once (a repeated one is 400). */
export function queryString(req: Request, name: string): string | undefined {
  const v = req.query[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw AppError.validation({ [name]: 'must be given once' });
  return v;
}

/** `limit` and `cursor` query parameters as GraphQL `first` and `after`. */
export function pageVariables(req: Request): { first?: number; after?: string } {
  const limit = queryString(req, 'limit');
  const cursor = queryString(req, 'cursor');
  if (limit !== undefined && !/^\d{1,4}$/.test(limit))
    throw AppError.validation({ limit: 'must be a positive integer' });
  return { first: limit === undefined ? undefined : Number(limit), after: cursor || undefined };
}

/** A JSON array of the page's items, with the next page in a `Link: <...>; rel="next"` header. */
export function listResponse<T, U>(
  req: Request,
  connection: { nodes: T[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } },
  item: (node: T) => U,
): RestResponse {
  const headers: Record<string, string> = {};
  const { hasNextPage, endCursor } = connection.pageInfo;
  if (hasNextPage && endCursor) {
    const url = new URL(req.originalUrl, 'http://placeholder');
    url.searchParams.set('cursor', endCursor);
    headers.Link = `<${url.pathname}${url.search}>; rel="next"`;
  }
  return { status: 200, body: connection.nodes.map(item), headers };
}

export function optionalString(b: Record<string, unknown>, name: string): string | undefined {
  const v = b[name];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw AppError.validation({ [name]: 'must be a string' });
  return v;
}
