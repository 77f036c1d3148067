import {
  GraphQLID,
  GraphQLInt,
  GraphQLInterfaceType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  parse,
  type DocumentNode,
  type ExecutionResult,
} from 'graphql';
import { compileQuery, type CompiledQuery } from 'graphql-jit';
import { CompiledOperations } from './graphql.executor';

class NotFound extends Error {
  readonly code = 'NOT_FOUND';
}

const schema = new GraphQLSchema({
  query: new GraphQLObjectType({
    name: 'Query',
    fields: {
      hello: {
        type: new GraphQLNonNull(GraphQLString),
        args: { n: { type: GraphQLInt } },
        resolve: (_root, { n }: { n?: number }) => `hello ${n ?? 0}`,
      },
      missing: {
        type: GraphQLString,
        resolve: async () => {
          throw new NotFound('no such thing');
        },
      },
    },
  }),
});

async function run(ops: CompiledOperations, query: string, variables?: Record<string, unknown>) {
  return (await ops.execute(parse(query), undefined, {}, variables)) as ExecutionResult;
}

describe('CompiledOperations', () => {
  it('answers a document the same way before and after it is compiled', async () => {
    const ops = new CompiledOperations(schema);
    const document = parse('query ($n: Int) { hello(n: $n) missing }');
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await ops.execute(document, undefined, {}, { n: 2 }));
    for (const a of answers) {
      expect(a.data).toEqual({ hello: 'hello 2', missing: null });
      // Apollo's error formatting reads extensions and the original error: both are there.
      expect(a.errors?.[0].extensions).toEqual({});
      expect(a.errors?.[0].originalError).toBeInstanceOf(NotFound);
      expect(a.errors?.[0].path).toEqual(['missing']);
    }
  });

  it('reports bad variables without data, compiled or not', async () => {
    const ops = new CompiledOperations(schema);
    for (let i = 0; i < 3; i++) {
      const a = await run(ops, 'query ($n: Int) { hello(n: $n) }', { n: 'x' });
      expect(a.data).toBeUndefined();
      expect(a.errors?.[0].message).toMatch(/\$n/);
    }
  });

  it('picks the named operation of a document with several', async () => {
    const ops = new CompiledOperations(schema);
    const document = parse('query A { hello } query B { hello(n: 1) }');
    for (let i = 0; i < 3; i++) {
      expect((await ops.execute(document, 'A', {}, {})).data).toEqual({ hello: 'hello 0' });
      expect((await ops.execute(document, 'B', {}, {})).data).toEqual({ hello: 'hello 1' });
    }
  });

  describe('error locations of a query compiled without them', () => {
    const Node = new GraphQLInterfaceType({
      name: 'Node',
      fields: { id: { type: new GraphQLNonNull(GraphQLID) } },
    });
    const Item: GraphQLObjectType = new GraphQLObjectType({
      name: 'Item',
      interfaces: [Node],
      fields: () => ({
        id: { type: new GraphQLNonNull(GraphQLID) },
        name: { type: new GraphQLNonNull(GraphQLString), resolve: (i: { name?: string }) => i.name },
        broken: {
          type: GraphQLString,
          resolve: () => {
            throw new Error('broken here');
          },
        },
        tags: { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(GraphQLString))) },
        children: { type: new GraphQLList(Item) },
      }),
    });
    const items = [
      { id: '1', name: 'one', tags: ['a', 'b'], children: [{ id: '3', tags: [] }] },
      { id: '2', tags: ['c', null], children: [] },
    ];
    const listSchema = new GraphQLSchema({
      query: new GraphQLObjectType({
        name: 'Query',
        fields: {
          items: { type: new GraphQLNonNull(new GraphQLList(Item)), resolve: () => items },
          node: { type: Node, resolve: () => ({ ...items[0], __typename: 'Item' }) },
        },
      }),
      types: [Item],
    });

    const documents = [
      '{ items { id name } }',
      '{ items { id tags } }',
      '{ items { broken } }',
      '{ a: items { b: name broken } items { name } }',
      'query Q { items { ...F ... on Item { name } ... on Node { id } } } fragment F on Item { name tags ...G } fragment G on Item { broken }',
      '{ items { children { name broken } ...C } } fragment C on Item { children { broken name } }',
      '{ items { name } items { name broken } }',
      '{ items { ...F ...F } } fragment F on Item { broken }',
      '{ node { id ... on Item { name broken } } }',
    ];

    /** What graphql-jit answers compiled from the document itself (with its locations). */
    async function located(document: DocumentNode) {
      const compiled = compileQuery(listSchema, document) as CompiledQuery;
      return shape(await compiled.query(undefined, {}, {}));
    }
    const shape = (r: ExecutionResult) => ({
      data: r.data,
      errors: r.errors?.map((e) => ({ message: e.message, path: e.path, locations: e.locations })),
    });

    it.each(documents)('%s: the locations graphql-jit gives', async (text) => {
      const ops = new CompiledOperations(listSchema);
      const document = parse(text);
      const expected = await located(document);
      expect(expected.errors?.length).toBeGreaterThan(0);
      expect(expected.errors?.every((e) => e.locations?.length)).toBe(true);
      await ops.execute(document, undefined, {}, {}); // the first run is graphql-js's, uncompiled
      for (let i = 0; i < 3; i++)
        expect(shape(await ops.execute(document, undefined, {}, {}))).toEqual(expected);
    });
  });
});
