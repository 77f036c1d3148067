import {
  execute,
  getNamedType,
  GraphQLError,
  isAbstractType,
  isObjectType,
  Kind,
  parse,
  print,
  TypeInfo,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type ExecutionResult,
  type FieldNode,
  type GraphQLField,
  type GraphQLObjectType,
  type FragmentDefinitionNode,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type SourceLocation,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';

/** A document is compiled the second time it is seen: one-off documents are not worth a compile. */
const COMPILE_AFTER = 2;

type Entry = {
  seen: number;
  compiled?: CompiledQuery | null;
  /** Set when compiled from a copy without locations: errors' locations are found from their path. */
  located?: Located;
};
interface Located {
  schema: GraphQLSchema;
  operation: OperationDefinitionNode;
  fragments: Map<string, FragmentDefinitionNode>;
}

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
      this.compile(entry, document, operationName);
    if (entry.compiled) {
      const result = entry.compiled.query(undefined, contextValue, variableValues);
      // No data: the variables did not coerce and nothing ran. graphql-js words those errors a
      // little differently; it answers them, so that a document's first run and the next agree.
      const located = entry.located;
      const answer = (r: ExecutionResult) =>
        r.data === undefined
          ? execute({ schema: this.schema, document, operationName, contextValue, variableValues })
          : withGraphQLErrors(r, located);
      return isPromise(result) ? result.then(answer) : answer(result);
    }
    return execute({ schema: this.schema, document, operationName, contextValue, variableValues });
  }

  private compile(entry: Entry, document: DocumentNode, operationName: string | null | undefined): void {
    entry.compiled = null;
    // Subscriptions are served over graphql-ws; graphql-jit compiles queries and mutations here.
    const operation = document.definitions.find(
      (d): d is OperationDefinitionNode =>
        d.kind === 'OperationDefinition' && (!operationName || d.name?.value === operationName),
    );
    if (!operation || operation.operation === 'subscription') return;
    // graphql-jit's code passes each leaf's source locations, as a fresh array of objects, to its
    // check of every value (for an error it might report): a fifth of what a list's result
    // building allocated. Compiled from a copy without locations, it passes an empty array, and
    // the locations of an error (rare) are found from its path in the document, as graphql-jit
    // would have given them. Only where the path names the field's nodes without doubt: every
    // selection on an object type (no interface or union between the root and a leaf).
    const unlocated = operation.operation === 'query' && !selectsAbstractType(this.schema, document);
    const compiled = compileQuery(
      this.schema,
      unlocated ? parse(print(document), { noLocation: true }) : document,
      operationName ?? undefined,
    );
    if (!isCompiledQuery(compiled)) return;
    entry.compiled = compiled;
    if (unlocated) {
      const fragments = new Map<string, FragmentDefinitionNode>();
      for (const d of document.definitions)
        if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
      entry.located = { schema: this.schema, operation, fragments };
    }
  }
}

/** Whether any field of the document (its operations and fragments) is of an interface or union. */
function selectsAbstractType(schema: GraphQLSchema, document: DocumentNode): boolean {
  const typeInfo = new TypeInfo(schema);
  let abstract = false;
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Field() {
        const type = typeInfo.getType();
        if (!type || isAbstractType(getNamedType(type))) abstract = true;
      },
    }),
  );
  return abstract;
}

/**
 * The locations graphql-jit gives an error at `path`: those of the field nodes it merges for the
 * path's last field (fragments spread once per selection, as its collectFields does), in order.
 */
function locationsAt(located: Located, path: readonly (string | number)[]): SourceLocation[] | undefined {
  const { schema, operation, fragments } = located;
  let type: GraphQLNamedType | undefined | null = schema.getRootType(operation.operation);
  let sets: SelectionSetNode[] = [operation.selectionSet];
  let nodes: FieldNode[] = [];
  for (const key of path) {
    if (typeof key === 'number') continue;
    if (!type || !isObjectType(type)) return undefined;
    const parent: GraphQLObjectType = type;
    const found: FieldNode[] = [];
    const visited = new Set<string>();
    const applies = (condition: { name: { value: string } } | undefined) => {
      if (!condition) return true;
      const t = schema.getType(condition.name.value);
      return t === parent || (!!t && isAbstractType(t) && schema.isSubType(t, parent));
    };
    const collect = (set: SelectionSetNode) => {
      for (const sel of set.selections) {
        if (sel.kind === Kind.FIELD) {
          if ((sel.alias ?? sel.name).value === key) found.push(sel);
        } else if (sel.kind === Kind.INLINE_FRAGMENT) {
          if (applies(sel.typeCondition)) collect(sel.selectionSet);
        } else if (!visited.has(sel.name.value)) {
          visited.add(sel.name.value);
          const fragment = fragments.get(sel.name.value);
          if (fragment && applies(fragment.typeCondition)) collect(fragment.selectionSet);
        }
      }
    };
    for (const set of sets) collect(set);
    if (!found.length) return undefined;
    nodes = found;
    const field: GraphQLField<unknown, unknown> | undefined = parent.getFields()[found[0].name.value];
    type = field ? getNamedType(field.type) : null;
    sets = found.flatMap((f) => (f.selectionSet ? [f.selectionSet] : []));
  }
  return nodes.flatMap((n) =>
    n.loc ? [{ line: n.loc.startToken.line, column: n.loc.startToken.column }] : [],
  );
}

function isPromise<T>(v: T | Promise<T>): v is Promise<T> {
  return typeof (v as Promise<T>)?.then === 'function';
}

/**
 * graphql-jit's errors lack graphql-js's `extensions` (Apollo's error formatting reads it):
 * they are rebuilt as graphql-js errors, with their path, locations and original error.
 */
function withGraphQLErrors(result: ExecutionResult, located?: Located): ExecutionResult {
  if (!result.errors?.length) return result;
  const errors = result.errors.map((e) => {
    const locations = (located && e.path && locationsAt(located, e.path)) || e.locations;
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
    if (!error.locations && locations) (error as { locations?: unknown }).locations = locations;
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
