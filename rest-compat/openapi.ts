import type { DocumentNode, OperationDefinitionNode } from 'graphql';
import type { ApiDoc, RouteDoc } from '../src/http/openapi/openapi.docs';
import type { RestRoute } from './route';
import { errorBody, integer, string, type JsonSchema } from '../src/http/openapi/json-schema';
import { VERSIONED_JSON } from '../src/http/http.helpers';

export interface OpenApiOptions {
  /** `{base_url}`. */
  publicUrl: string;
  /** `{bridge_url}`. */
  bridgeUrl: string;
  apiKeyHeader: string;
  /** The route table. */
  routes: RestRoute[];
  /** Paths served outside it. */
  others: ApiDoc[];
}

const json = (schema: JsonSchema) => ({
  'application/json': { schema },
  [VERSIONED_JSON]: { schema },
});

const errorResponse = {
  description: 'the error body; 429 `RATE_LIMITED` and 503 `UNAVAILABLE` say when to retry',
  headers: { 'Retry-After': { $ref: '#/components/headers/Retry-After' } },
  content: json(errorBody),
};

const SECURITY = {
  none: [],
  session: [{ session: [] }],
  cdr: [{ cdrBasic: [] }],
  bridge: [{ bridgeKey: [] }],
};

/** `/api/v1/models/:id` -> `/api/v1/models/{id}` and its path parameters. */
function openApiPath(path: string): { path: string; names: string[] } {
  const names: string[] = [];
  const converted = path.replace(/:(\w+)/g, (_m, name: string) => {
    names.push(name);
    return `{${name}}`;
  });
  return { path: converted, names };
}

function operationName(document: DocumentNode): string {
  const op = document.definitions.find((d): d is OperationDefinitionNode => d.kind === 'OperationDefinition');
  if (!op?.name) throw new Error('every REST-compat document names its operation');
  return op.name.value;
}

/** The Server Object of the chat bridge's listener, which its operations name as their own. */
const bridgeServer = (bridgeUrl: string) => ({
  url: '{bridge_url}',
  description: 'the chat bridge (BRIDGE_PORT)',
  variables: { bridge_url: { default: bridgeUrl } },
});

function operation(
  doc: RouteDoc & Partial<ApiDoc>,
  operationId: string,
  bridge: Record<string, unknown>,
): Record<string, unknown> {
  const { names } = openApiPath(doc.path);
  const parameters = [
    ...names.map((name) => ({ name, in: 'path', required: true, schema: string })),
    ...Object.entries(doc.query ?? {}).map(([name, q]) => ({
      name,
      in: 'query',
      description: q.description,
      schema: q.schema ?? string,
    })),
    ...Object.entries(doc.headers ?? {}).map(([name, h]) => ({
      name,
      in: 'header',
      description: h.description,
      schema: h.schema ?? string,
    })),
    ...(doc.paged
      ? [
          {
            name: 'limit',
            in: 'query',
            description:
              'items per page at most (1-200, default 50). A page may hold fewer, none even, while more ' +
              'follow: one whose filters its index does not serve stops after a bounded scan. The `Link` ' +
              'header, not the count of items, says whether there is a next page.',
            schema: { ...integer, minimum: 1, maximum: 200 },
          },
          {
            name: 'cursor',
            in: 'query',
            description: 'from the `Link` header of the previous page',
            schema: string,
          },
        ]
      : []),
  ];
  const status = String(doc.status ?? 200);
  const success: Record<string, unknown> = {
    description: doc.status === 204 ? 'done; no body' : 'success',
    headers: {
      ...(doc.paged ? { Link: { $ref: '#/components/headers/Link' } } : {}),
      'RateLimit-Limit': { $ref: '#/components/headers/RateLimit-Limit' },
      'RateLimit-Remaining': { $ref: '#/components/headers/RateLimit-Remaining' },
      'RateLimit-Reset': { $ref: '#/components/headers/RateLimit-Reset' },
      ...Object.fromEntries(
        Object.entries(doc.responseHeaders ?? {}).map(([name, h]) => [
          name,
          { description: h.description, schema: h.schema ?? string },
        ]),
      ),
    },
    ...(doc.response ? { content: json(doc.response) } : {}),
  };
  return {
    operationId,
    summary: doc.summary,
    tags: [tagOf(doc)],
    ...(parameters.length ? { parameters } : {}),
    ...(doc.request
      ? { requestBody: { required: true, content: json(doc.request) } }
      : doc.requestBody
        ? { requestBody: doc.requestBody }
        : {}),
    responses: {
      ...(doc.response || doc.status === 204 || !doc.responses ? { [status]: success } : {}),
      ...doc.responses,
      '4XX': { $ref: '#/components/responses/Error' },
      '5XX': { $ref: '#/components/responses/Error' },
    },
    ...(doc.security ? { security: SECURITY[doc.security] } : {}),
    // Its own server, variables included: OpenAPI substitutes only those it defines.
    ...(doc.bridge ? { servers: [bridge] } : {}),
  };
}

/** The part of the path that names the resource: `/api/v1/models/:id/like` -> `models`. */
function tagOf(doc: RouteDoc & Partial<ApiDoc>): string {
  if (doc.tag) return doc.tag;
  if (doc.bridge) return 'chat bridge';
  const parts = doc.path.split('/').filter(Boolean);
  const tag =
    parts[0] !== 'api'
      ? parts[0]
      : parts[1] === 'v2' && parts[2] !== 'auth'
        ? 'telephony'
        : parts[2] === 'fetch-metadata'
          ? 'auth'
          : parts[2];
  // A tag is a string (OpenAPI); a path too short to name its resource says its tag.
  if (!tag) throw new Error(`${doc.method.toUpperCase()} ${doc.path}: give it a tag`);
  return tag;
}

/**
 * The OpenAPI 3.1 document of the REST paths, derived from the route table and the documented
 * paths beside it (the login flow, uploads, files, CDRs, the chat bridge).
 */
export function openApiDocument(opts: OpenApiOptions): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const bridge = bridgeServer(opts.bridgeUrl);
  const add = (doc: RouteDoc & Partial<ApiDoc>, operationId: string) => {
    const { path } = openApiPath(doc.path);
    const item = (paths[path] ??= {});
    if (item[doc.method]) throw new Error(`${doc.method.toUpperCase()} ${doc.path} is documented twice`);
    item[doc.method] = operation(doc, operationId, bridge);
  };
  for (const r of opts.routes) add(r, operationName(r.document as DocumentNode));
  for (const d of opts.others) add(d, d.operationId);
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'Media processing platform',
      version: '1',
      description:
        'The REST paths of the service. GraphQL (`/graphql`, with subscriptions over graphql-ws) is ' +
        'the primary API; each REST path runs a GraphQL operation and answers the legacy JSON. ' +
        `Bodies are \`application/json\` or \`${VERSIONED_JSON}\` (answered in that type when ` +
        '`Accept` asks for it).',
    },
    // The API's; the chat bridge's operations name their own (a server listed here would be
    // offered for every path).
    servers: [
      {
        url: '{base_url}',
        variables: { base_url: { default: opts.publicUrl, description: 'the API (PUBLIC_URL)' } },
      },
    ],
    security: [{ bearer: [] }, { apiKey: [] }],
    paths,
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: "a user token (the identity provider's JWT) or an API key",
        },
        apiKey: { type: 'apiKey', in: 'header', name: opts.apiKeyHeader, description: 'an API key' },
        session: { type: 'apiKey', in: 'cookie', name: 'auth_session', description: 'a login session' },
        cdrBasic: { type: 'http', scheme: 'basic', description: 'TELEPHONY_CDR_USERNAME / _PASSWORD' },
        bridgeKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: "the bridge's api_key" },
      },
      responses: { Error: errorResponse },
      schemas: { Error: errorBody },
      headers: {
        Link: {
          description:
            'the next page: `</path?...&cursor=...>; rel="next"`; absent on the last page. Present after ' +
            'a short (or empty) page too: follow it until it is absent.',
          schema: string,
        },
        'Retry-After': { description: 'seconds to wait before retrying', schema: integer },
        'RateLimit-Limit': { description: 'requests allowed per window to this principal', schema: integer },
        'RateLimit-Remaining': { description: 'requests left in the window', schema: integer },
        'RateLimit-Reset': { description: 'seconds until the window resets', schema: integer },
      },
    },
  };
}
