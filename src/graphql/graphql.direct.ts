import type { IncomingMessage } from 'node:http';
import type { ApolloServerPlugin } from '@apollo/server';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { DocumentNode, GraphQLError, GraphQLFormattedError, GraphQLSchema } from 'graphql';
import type { RequestContext } from './graphql.context';
import { requestLevelStatus, type GraphQLErrorFormatter } from './graphql.errors';
import type { CompiledOperations } from './graphql.executor';
import { inputProblems } from './graphql.inputs';
import { writeText } from '../http/http.helpers';

/** How many distinct documents are answered directly; the oldest is forgotten first. */
const MAX_DOCUMENTS = 1000;

type OperationType = 'query' | 'mutation';
interface Operation {
  type: OperationType;
  name: string | undefined;
}
interface Known {
  document: DocumentNode;
  /** By the request's operationName ('' when it named none): the operations Apollo resolved. */
  operations: Map<string, Operation>;
}
interface Found {
  known: Known;
  operation: Operation;
  operationName: string | undefined;
  variables: Record<string, unknown> | undefined;
  contentType: string;
}

export interface DirectOptions {
  schema: GraphQLSchema;
  operations: CompiledOperations;
  formatError: GraphQLErrorFormatter;
  contextOf: (req: Request, res: Response) => RequestContext;
  /** Told of every operation answered here, as Apollo's metrics plugin is. */
  observe: (name: string | undefined, type: OperationType, failed: boolean, seconds: number) => void;
}

const JSON_BODY = /^application\/json\s*(;|$)/i;
const JSON_TYPE = 'application/json; charset=utf-8';
const GRAPHQL_RESPONSE_TYPE = 'application/graphql-response+json; charset=utf-8';

/**
 * `POST /graphql` for documents Apollo has already parsed, validated (with every rule of the
 * service) and resolved to an operation: the next request with the same text (or the same
 * persisted-query hash) runs the compiled operation straight from Express and answers what
 * Apollo would, without Apollo's request pipeline. Profiles under the list load found that
 * pipeline (its document hashing, plugin hooks, header maps, response cloning and promise
 * chains) a third of the GraphQL path's CPU. Anything unusual (first sight of a document, APQ
 * registration, multipart, an Accept it would refuse, bad input, variables that do not coerce)
 * goes to Apollo, which stays the server of record.
 */
export class DirectOperations {
  private readonly byText = new Map<string, Known>();
  private readonly textOfHash = new Map<string, string>();
  private readonly contentTypes = new Map<string, string | null>();

  constructor(private readonly options: DirectOptions) {}

  /** An Apollo plugin remembering each operation Apollo resolved, with its persisted-query hash. */
  readonly plugin: ApolloServerPlugin<RequestContext> = {
    requestDidStart: async () => ({
      didResolveOperation: async ({ request, document, operation, operationName }) => {
        const type = operation?.operation;
        if (typeof request.query !== 'string' || (type !== 'query' && type !== 'mutation')) return;
        this.remember(request.query, document, request.operationName ?? '', {
          type,
          name: operationName ?? undefined,
        });
        const hash = (request.extensions?.persistedQuery as { sha256Hash?: unknown } | undefined)?.sha256Hash;
        if (typeof hash === 'string') bounded(this.textOfHash, hash, request.query);
      },
    }),
  };

  readonly handler: RequestHandler = (req, res, next) => {
    const found = this.find(req);
    if (!found) return next();
    this.run(req, res, next, found).catch(next);
  };

  private remember(text: string, document: DocumentNode, key: string, op: Operation) {
    let known = this.byText.get(text);
    if (!known || known.document !== document) {
      known = { document, operations: new Map() };
      bounded(this.byText, text, known);
    }
    known.operations.set(key, op);
  }

  private find(req: Request): Found | null {
    const body = req.body as Record<string, unknown> | undefined;
    // JSON only: other types (multipart uploads) go through Apollo's CSRF prevention.
    if (req.method !== 'POST' || !hasJsonBody(req)) return null;
    if (!body || typeof body !== 'object' || Array.isArray(body)) return null;
    const { query, variables, operationName, extensions } = body;
    let text = query;
    if (extensions !== undefined) {
      // A persisted query sent by its hash alone; one sent with its text registers it (Apollo).
      const persisted = (
        extensions as { persistedQuery?: { version?: unknown; sha256Hash?: unknown } } | null
      )?.persistedQuery;
      if (query !== undefined || persisted?.version !== 1 || typeof persisted.sha256Hash !== 'string')
        return null;
      if (Object.keys(extensions as object).length !== 1) return null;
      text = this.textOfHash.get(persisted.sha256Hash);
    }
    if (typeof text !== 'string') return null;
    if (operationName !== undefined && operationName !== null && typeof operationName !== 'string')
      return null;
    if (
      variables !== undefined &&
      variables !== null &&
      (typeof variables !== 'object' || Array.isArray(variables))
    )
      return null;
    const known = this.byText.get(text);
    const operation = known?.operations.get(operationName ?? '');
    const contentType = this.contentType(req);
    if (!known || !operation || !contentType) return null;
    const vars = (variables ?? undefined) as Record<string, unknown> | undefined;
    if (inputProblems(this.options.schema, known.document, operationName, vars)) return null;
    return { known, operation, operationName: operationName ?? undefined, variables: vars, contentType };
  }

  private async run(
    req: Request,
    res: Response,
    next: NextFunction,
    {
      known,
      operation,
      operationName,
      variables,
      contentType,
    }: NonNullable<ReturnType<DirectOperations['find']>>,
  ) {
    const started = performance.now();
    res.locals.graphqlOperation = operation.name ?? '(anonymous)';
    const context = this.options.contextOf(req, res);
    const result = await this.options.operations.execute(known.document, operationName, context, variables);
    // No data at all: the variables did not coerce and nothing ran; Apollo answers those.
    if (result.data === undefined) return next();
    let status = 200;
    let errors: GraphQLFormattedError[] | undefined;
    if (result.errors?.length) {
      errors = result.errors.map((e) => {
        const { formatted, httpStatus } = enriched(e);
        if (httpStatus) status = httpStatus;
        return this.options.formatError(formatted, e);
      });
      const failed = requestLevelStatus(errors, result.data);
      if (failed) {
        status = failed.status;
        if (failed.retryAfter !== undefined) res.setHeader('Retry-After', String(failed.retryAfter));
      }
    }
    const text = JSON.stringify({ errors, data: result.data, extensions: result.extensions });
    this.options.observe(operation.name, operation.type, !!errors, (performance.now() - started) / 1000);
    // Apollo's answer ends with a newline; written without Express's send (its ETag).
    writeText(res, status, 'content-type', contentType, text, '\n');
  }

  /** The type Apollo would answer for this Accept (remembered per distinct header), or null. */
  private contentType(req: Request): string | null {
    const accept = req.headers.accept;
    if (!accept) return JSON_TYPE;
    let type = this.contentTypes.get(accept);
    if (type === undefined) {
      // Apollo's negotiation also offers a JSONP-like callback type; leave such clients to it.
      const chosen = accept.includes('callbackSpec')
        ? false
        : req.accepts(['application/json', 'application/graphql-response+json']);
      type = chosen === 'application/json' ? JSON_TYPE : chosen ? GRAPHQL_RESPONSE_TYPE : null;
      bounded(this.contentTypes, accept, type);
    }
    return type;
  }
}

/** A request whose body is declared `application/json` (what Apollo takes without CSRF checks). */
export function hasJsonBody(req: IncomingMessage): boolean {
  return JSON_BODY.test(req.headers['content-type'] ?? '');
}

/** Apollo's enrichment of an execution error before formatting: a code, and `http` taken out. */
function enriched(error: GraphQLError): { formatted: GraphQLFormattedError; httpStatus?: number } {
  const { http, ...extensions } = (error.extensions ?? {}) as Record<string, unknown> & {
    http?: { status?: number };
  };
  extensions.code ??= 'INTERNAL_SERVER_ERROR';
  return { formatted: { ...error.toJSON(), extensions }, httpStatus: http?.status };
}

function bounded<K, V>(map: Map<K, V>, key: K, value: V): void {
  if (!map.has(key) && map.size >= MAX_DOCUMENTS) map.delete(map.keys().next().value as K);
  map.set(key, value);
}
