import type { JsonSchema } from './json-schema';

export interface RestResponse {
  status?: number;
  /** Omitted for 204. */
  body?: unknown;
  headers?: Record<string, string>;
}

/** A query parameter or a header. */
export interface QueryParameter {
  description: string;
  /** Defaults to a string. */
  schema?: JsonSchema;
}

/**
 * What the OpenAPI document says of a path (built by rest-compat/openapi.ts). Its schemas are JSON Schema
 * 2020-12 and describe the bodies exactly: the OpenAPI test checks every real answer against them.
 */
export interface RouteDoc {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** Express syntax: `/api/v1/models/:id`. */
  path: string;
  summary: string;
  /** Query parameters the route reads (a list's `limit` and `cursor` come with `paged`). */
  query?: Record<string, QueryParameter>;
  /** A list: `limit` and `cursor`, and the next page in a `Link` header. */
  paged?: boolean;
  /** Request headers the route reads besides the credentials (`Idempotency-Key`, `Prefer`). */
  headers?: Record<string, QueryParameter>;
  /** Headers of a success besides `Link` and the rate limit's. */
  responseHeaders?: Record<string, QueryParameter>;
  /** The JSON request body, where the route reads one. */
  request?: JsonSchema;
  /** The status of a success; 200 unless said. */
  status?: 200 | 201 | 204;
  /** The legacy success body; none for 204. */
  response?: JsonSchema;
}

/** A documented path served outside the route table (login, uploads, files, CDRs, the bridge). */
export interface ApiDoc extends RouteDoc {
  operationId: string;
  /** The credential it takes; the API's bearer token or API key unless said. */
  security?: 'none' | 'session' | 'cdr' | 'bridge';
  /** Served by the chat bridge's listener (`{bridge_url}`), not the API's. */
  bridge?: boolean;
  /** Its group in the document; by default the resource its path names (openapi.ts `tagOf`). */
  tag?: string;
  /** A body that is not JSON (an OpenAPI Request Body Object). */
  requestBody?: Record<string, unknown>;
  /** Answers besides the JSON success: redirects, files (OpenAPI Response Objects by status). */
  responses?: Record<string, Record<string, unknown>>;
}

/**
 * `Idempotency-Key` on the routes that make something (src/idempotency/): spread into a route's
 * `headers` and `responseHeaders`.
 */
export const idempotency = {
  headers: {
    'Idempotency-Key': {
      description:
        'repeating a request with the same key (24 h) answers the first answer again and makes nothing; ' +
        'the same key with another request is 409 `CONFLICT`',
      schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
    },
  },
  responseHeaders: {
    'Idempotent-Replayed': {
      description: '`true` when this is the stored answer of an earlier request with the same key',
      schema: { type: 'string', enum: ['true'] },
    },
  },
} satisfies Pick<RouteDoc, 'headers' | 'responseHeaders'>;
