import {
  execute,
  GraphQLError,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';

/** A document is compiled the second time it is seen: one-off documents are not worth a compile. */
const COMPILE_AFTER = 2;

type Entry = { seen: number; compiled?: CompiledQuery | null };

/**
 * Executes operations with graphql-jit: each (document, operation) is compiled once to a plain
 * function, then run without interpreting the document again. Keyed by the parsed document
 * object, which Apollo's document store hands out for the same query text (parsed and validated
 * once), so the cache lives exactly as long as that store keeps the document. Documents
 * graphql-jit cannot compile run on graphql-js, with the same results.
 */
export class CompiledOperations {
  private readonly byDocument = new WeakMap<DocumentNode, Map<string, Entry>>();

  constructor(private readonly schema: GraphQLSchema) {}

  execute(
    document: DocumentNode,
    operationName: string | null | undefined,
    contextValue: unknown,
    variableValues: Record<string, unknown> | undefined,
  ): Promise<ExecutionResult> | ExecutionResult {
    let entries = this.byDocument.get(document);
    if (!entries) this.byDocument.set(document, (entries = new Map()));
    const key = operationName ?? '';
    let entry = entries.get(key);
    if (!entry) entries.set(key, (entry = { seen: 0 }));
    if (entry.compiled === undefined && ++entry.seen >= COMPILE_AFTER)
      entry.compiled = this.compile(document, operationName);
    const args = { schema: this.schema, document, operationName, contextValue, variableValues };
    if (entry.compiled) {
      const result = entry.compiled.query(undefined, contextValue, variableValues);
      // No data: the variables did not coerce and nothing ran. graphql-js words those errors a
      // little differently; it answers them, so that a document's first run and the next agree.
      const answer = (r: ExecutionResult) => (r.data === undefined ? execute(args) : withGraphQLErrors(r));
      return isPromise(result) ? result.then(answer) : answer(result);
    }
    return execute(args);
  }

  private compile(document: DocumentNode, operationName: string | null | undefined): CompiledQuery | null {
    // Subscriptions are served over graphql-ws; graphql-jit compiles queries and mutations here.
    const operation = document.definitions.find(
      (d): d is OperationDefinitionNode =>
        d.kind === 'OperationDefinition' && (!operationName || d.name?.value === operationName),
    );
    if (!operation || operation.operation === 'subscription') return null;
    const compiled = compileQuery(this.schema, document, operationName ?? undefined);
    return isCompiledQuery(compiled) ? compiled : null;
  }
}

function isPromise<T>(v: T | Promise<T>): v is Promise<T> {
  return typeof (v as Promise<T>)?.then === 'function';
}

/**
 * graphql-jit's errors lack graphql-js's `extensions` (Apollo's error formatting reads it):
 * they are rebuilt as graphql-js errors, with their path, locations and original error.
 */
function withGraphQLErrors(result: ExecutionResult): ExecutionResult {
  if (!result.errors?.length) return result;
  const errors = result.errors.map((e) => {
    const error = new GraphQLError(e.message, {
      nodes: e.nodes,
      source: e.source,
      positions: e.positions,
      path: e.path,
      // An error with a path arose while executing (a null for a non-null field, say): it is the
      // service's, as graphql-js reports it, not the request's.
      originalError: e.originalError ?? (e.path ? new Error(e.message) : undefined),
      extensions: e.extensions,
    });
    // graphql-jit gives locations without the nodes graphql-js would compute them from.
    if (!error.locations && e.locations) (error as { locations?: unknown }).locations = e.locations;
    return error;
  });
  return { ...result, errors };
}

/**
 * Apollo Server's executor hook: a "gateway" of one local schema whose executor runs the
 * compiled operations. Apollo keeps everything else (HTTP, parsing and validation with its
 * document cache, APQ, plugins, error formatting).
 */
export function compiledGateway(schema: GraphQLSchema, operations = new CompiledOperations(schema)) {
  return {
    onSchemaLoadOrUpdate(callback: (s: { apiSchema: GraphQLSchema; coreSupergraphSdl: string }) => void) {
      callback({ apiSchema: schema, coreSupergraphSdl: '' });
      return () => undefined;
    },
    async load() {
      return {
        executor: async (rc: {
          document: DocumentNode;
          operationName: string | null;
          context: unknown;
          request: { variables?: Record<string, unknown> };
        }) => operations.execute(rc.document, rc.operationName, rc.context, rc.request.variables),
      };
    },
    async stop() {},
  };
}
