import {
  GraphQLInt,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  parse,
  type ExecutionResult,
} from 'graphql';
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
});
