import { createHash, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { ApolloServer } from '@apollo/server';
import { expressMiddleware } from '@as-integrations/express5';
import express from 'express';
import { buildSchema } from 'graphql';
import request from 'supertest';
import { formatGraphQLError } from '../src/graphql/graphql.errors';
import { DirectOperations } from '../src/graphql/graphql.direct';
import { compiledGateway, CompiledOperations } from '../src/graphql/graphql.executor';
import type { RequestContext } from '../src/graphql/graphql.context';
import { Loaders } from '../src/graphql/graphql.loaders';
import { createLogger } from '../src/common/logger';
import { startTestApp, type TestApp } from './helpers/app';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/**
 * The first request of a document goes through Apollo, which resolves it; the next ones are
 * answered from Express directly (src/graphql/graphql.direct.ts). Both must answer alike.
 */
describe('documents answered directly, the service', () => {
  let t: TestApp;
  let alice: string;
  beforeAll(async () => {
    t = await startTestApp({ ROLES: 'api' });
    alice = `Bearer ${await t.tokenFor('alice')}`;
  });
  afterAll(() => t?.close());

  const post = (body: object, headers: Record<string, string> = {}) => {
    let r = t.http().post('/graphql').set('authorization', alice).set('content-type', 'application/json');
    for (const [k, v] of Object.entries(headers)) r = r.set(k, v);
    return r.send(body);
  };
  /** Three times the same request: the answers (status, type, body) must not differ. */
  const thrice = async (body: object, headers?: Record<string, string>) => {
    const answers = [];
    for (let i = 0; i < 3; i++) {
      const res = await post(body, headers);
      answers.push({ status: res.status, type: res.headers['content-type'], body: res.body as unknown });
    }
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
    return answers[0];
  };

  it('answers a query alike every time, in the type the Accept header asks for', async () => {
    const me = await thrice({ query: 'query Me { me { id username } }' });
    expect(me).toMatchObject({ status: 200, type: 'application/json; charset=utf-8' });
    expect((me.body as { data: { me: { username: string } } }).data.me.username).toBe('alice');
    const typed = await thrice(
      { query: 'query Me { me { id username } }' },
      { accept: 'application/graphql-response+json, application/json;q=0.9' },
    );
    expect(typed.type).toBe('application/graphql-response+json; charset=utf-8');
    expect(typed.body).toEqual(me.body);
  });

  it("answers a resolver's error alike: code, path, no data", async () => {
    const missing = await thrice({ query: `{ mediaAsset(id: "${randomUUID()}") { id } }` });
    expect(missing.status).toBe(200);
    expect(missing.body).toMatchObject({
      data: null,
      errors: [{ path: ['mediaAsset'], extensions: { code: 'NOT_FOUND' } }],
    });
  });

  it('answers variables that do not fit, and bad text, alike (400)', async () => {
    const query = 'query ($first: Int) { media(first: $first) { nodes { id } } }';
    const uncoerced = await thrice({ query, variables: { first: 'ten' } });
    expect(uncoerced.status).toBe(400);
    expect(uncoerced.body).toMatchObject({ errors: [{ extensions: { code: 'BAD_REQUEST' } }] });
    // Known to the direct path once it ran well: the same document with bad variables still fails.
    await post({ query, variables: { first: 1 } });
    expect(await thrice({ query, variables: { first: 'ten' } })).toEqual(uncoerced);
    const tags = 'mutation ($id: ID!, $tags: [String!]!) { updateMediaTags(id: $id, tags: $tags) { id } }';
    const nul = await thrice({ query: tags, variables: { id: randomUUID(), tags: ['a\u0000b'] } });
    expect(nul.status).toBe(400);
    expect(nul.body).toMatchObject({ errors: [{ extensions: { code: 'VALIDATION_FAILED' } }] });
  });

  it('runs a mutation every time it is sent, and the operation the request names', async () => {
    const create =
      'mutation Create($n: String!) { createApiKey(input: { name: $n }) { apiKey { id name } } }';
    const ids = new Set<string>();
    for (const n of ['one', 'two', 'three']) {
      const res = await post({ query: create, variables: { n } });
      expect(res.body.data.createApiKey.apiKey.name).toBe(n);
      ids.add(res.body.data.createApiKey.apiKey.id);
    }
    expect(ids.size).toBe(3);
    const two = 'query A { me { username } } query B { me { id } }';
    for (let i = 0; i < 2; i++) {
      expect((await post({ query: two, operationName: 'A' })).body.data.me).toEqual({ username: 'alice' });
      expect(Object.keys((await post({ query: two, operationName: 'B' })).body.data.me)).toEqual(['id']);
      const neither = await post({ query: two });
      expect(neither.status).toBe(400);
    }
  });

  it('keeps the credential and the owner: no answer is shared between principals', async () => {
    const bob = `Bearer ${await t.tokenFor('bob')}`;
    const query = 'query Me { me { username } }';
    await post({ query });
    const asBob = await t
      .http()
      .post('/graphql')
      .set('authorization', bob)
      .set('content-type', 'application/json')
      .send({ query });
    expect(asBob.body.data.me.username).toBe('bob');
    const anonymous = await t.http().post('/graphql').set('content-type', 'application/json').send({ query });
    expect(anonymous.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
  });
});

describe('documents answered directly, beside Apollo', () => {
  const schema = buildSchema('type Query { hello(name: String): String!, fail: String, broken: String! }');
  const fields = schema.getQueryType()!.getFields();
  fields.hello.resolve = (_root, { name }: { name?: string }) => `hello ${name ?? 'you'}`;
  fields.fail.resolve = () => {
    throw new Error('boom');
  };
  fields.broken.resolve = () => null;
  let apolloRequests = 0;
  let server: import('node:http').Server;
  let apollo: ApolloServer<RequestContext>;
  let url: string;

  beforeAll(async () => {
    const log = createLogger('silent');
    const operations = new CompiledOperations(schema);
    const contextOf = (): RequestContext =>
      ({
        requestId: randomUUID(),
        principal: null,
        log,
        loaders: new Loaders(),
      }) as unknown as RequestContext;
    const direct = new DirectOperations({
      schema,
      operations,
      formatError: formatGraphQLError(log, false),
      contextOf,
      observe: () => undefined,
    });
    apollo = new ApolloServer<RequestContext>({
      gateway: compiledGateway(schema, operations),
      formatError: formatGraphQLError(log, false),
      plugins: [
        direct.plugin,
        {
          async requestDidStart() {
            apolloRequests++;
          },
        },
      ],
    });
    await apollo.start();
    const app = express();
    app.use(express.json());
    app.use('/graphql', direct.handler);
    app.use('/graphql', expressMiddleware(apollo, { context: async () => contextOf() }));
    server = app.listen(0);
    await new Promise((r) => server.once('listening', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await apollo?.stop();
    server?.close();
  });

  it('answers a document from the second request on without Apollo, alike', async () => {
    const body = { query: '{ hello(name: "ann") fail }' };
    const first = await request(url).post('/graphql').send(body);
    expect(apolloRequests).toBe(1);
    const second = await request(url).post('/graphql').send(body);
    expect(apolloRequests).toBe(1);
    expect(second.status).toBe(first.status);
    expect(second.body).toEqual(first.body);
    expect(second.body.data.hello).toBe('hello ann');
    expect(second.body.errors[0].path).toEqual(['fail']);
    // A null where the schema promised a value is the server's fault, both ways.
    const broken = { query: '{ broken }' };
    const once = await request(url).post('/graphql').send(broken);
    const again = await request(url).post('/graphql').send(broken);
    expect(once.body.errors[0].extensions.code).toBe('INTERNAL');
    expect([again.status, again.body]).toEqual([once.status, once.body]);
  });

  it('answers a persisted query by its hash once Apollo registered it', async () => {
    const query = 'query ($n: String) { hello(name: $n) }';
    const persisted = { persistedQuery: { version: 1, sha256Hash: sha256(query) } };
    const before = apolloRequests;
    await request(url)
      .post('/graphql')
      .send({ query, variables: { n: 'x' }, extensions: persisted });
    expect(apolloRequests).toBe(before + 1);
    const byHash = await request(url)
      .post('/graphql')
      .send({ variables: { n: 'bo' }, extensions: persisted });
    expect(byHash.body).toEqual({ data: { hello: 'hello bo' } });
    expect(apolloRequests).toBe(before + 1);
    // A hash nobody registered is Apollo's to answer.
    const unknown = await request(url)
      .post('/graphql')
      .send({ extensions: { persistedQuery: { version: 1, sha256Hash: sha256('{ fail }') } } });
    expect(unknown.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    expect(apolloRequests).toBe(before + 2);
  });

  it('leaves to Apollo what it refuses: an Accept it cannot answer, a body that is no request', async () => {
    const body = { query: '{ hello }' };
    await request(url).post('/graphql').send(body);
    const before = apolloRequests;
    const refused = await request(url).post('/graphql').set('accept', 'text/html').send(body);
    expect(refused.status).toBe(406);
    expect(apolloRequests).toBe(before + 1);
    // Apollo refuses a batch before its pipeline starts; answered directly it would be a 200.
    const batch = await request(url).post('/graphql').send([body]);
    expect(batch.status).toBe(400);
  });
});
