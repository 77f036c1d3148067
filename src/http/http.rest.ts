import type { Request } from 'express';
import { AppError, type ErrorDetails } from '../common/errors';
import { checkText } from '../common/text';
import type { RestResponse } from './openapi/openapi.docs';

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

/** Query strings parsed once per request: Express parses the URL again at each `req.query`. */
const parsedQueries = new WeakMap<Request, Request['query']>();

/** The request's query parameters (`req.query`, parsed once). */
export function queryOf(req: Request): Request['query'] {
  let query = parsedQueries.get(req);
  if (query === undefined) parsedQueries.set(req, (query = req.query));
  return query;
}

/** A query parameter given at most once (a repeated one is 400). */
export function queryString(req: Request, name: string): string | undefined {
  const v = queryOf(req)[name];
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
  if (hasNextPage && endCursor) headers.Link = nextPageLink(req.originalUrl, endCursor);
  return { status: 200, body: connection.nodes.map(item), headers };
}

function linkOf(originalUrl: string, cursor: string): string {
  const url = new URL(originalUrl, 'http://placeholder');
  url.searchParams.set('cursor', cursor);
  return `<${url.pathname}${url.search}>; rel="next"`;
}

/** Stands for the cursor in a remembered link: letters only, so no URL encoding changes it. */
const CURSOR_MARK = 'nextPageCursorMark';
/** The next page's link of a request URL, split where its cursor goes (null: not splittable). */
const linkTemplates = new Map<string, [string, string] | null>();

/**
 * The `Link` of the next page. The same URL is often asked again (a client polling its first
 * page), so its link is parsed once and the cursor put in its place; cursors are base64url,
 * which URL encoding leaves as they are (any other text goes through URL itself).
 */
export function nextPageLink(originalUrl: string, cursor: string): string {
  if (!/^[\w-]+$/.test(cursor)) return linkOf(originalUrl, cursor);
  let template = linkTemplates.get(originalUrl);
  if (template === undefined) {
    const parts = originalUrl.includes(CURSOR_MARK)
      ? []
      : linkOf(originalUrl, CURSOR_MARK).split(CURSOR_MARK);
    template = parts.length === 2 ? [parts[0], parts[1]] : null;
    if (linkTemplates.size >= 256) linkTemplates.clear();
    linkTemplates.set(originalUrl, template);
  }
  return template ? template[0] + cursor + template[1] : linkOf(originalUrl, cursor);
}

export function optionalString(b: Record<string, unknown>, name: string): string | undefined {
  const v = b[name];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw AppError.validation({ [name]: 'must be a string' });
  return v;
}
