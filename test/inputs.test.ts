import { createClient, type Client } from 'graphql-ws';
import request from 'supertest';
import WebSocket from 'ws';
import { startTestApp, type TestApp } from './helpers/app';
import { BUILTIN } from './helpers/jobs';
import { pngBytes, uploadFile } from './helpers/media';

let t: TestApp;
let prod: TestApp;
let alice: string;

beforeAll(async () => {
  t = await startTestApp();
  // Production: what it hides. Same database and issuer.
  prod = await startTestApp(
    { NODE_ENV: 'production', LOG_LEVEL: 'silent' },
    { databaseUrl: t.databaseUrl, issuer: t.issuer },
  );
  alice = `Bearer ${await t.tokenFor('alice')}`;
});
afterAll(async () => {
  await prod.close();
  await t.close();
});

const NUL = 'a\u0000b';
const LONE = 'a\ud800b';

function connect(app: TestApp): Client {
  return createClient({
    url: `ws://127.0.0.1:${app.port}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: alice },
    retryAttempts: 0,
  });
}

/** The errors of one operation over a websocket (a `next` with errors, or an `error` message). */
function wsErrors(app: TestApp, query: string, variables: Record<string, unknown> = {}) {
  const client = connect(app);
  return new Promise<{ message: string; extensions?: Record<string, unknown> }[]>((resolve, reject) => {
    client.subscribe(
      { query, variables },
      {
        next: (v) => v.errors && resolve(v.errors as never),
        error: (e) => (Array.isArray(e) ? resolve(e) : reject(e)),
        complete: () => resolve([]),
      },
    );
  }).finally(() => client.dispose());
}

const teamNames = async () =>
  ((await t.http().get('/api/v1/teams').set('authorization', alice)).body as { name: string }[]).map(
    (x) => x.name,
  );

describe('NUL and lone surrogates in any string input', () => {
  it.each([
    ['POST /api/v1/teams', () => t.http().post('/api/v1/teams').send({ name: NUL }), 'name'],
    [
      'POST /api/v1/teams (lone surrogate)',
      () => t.http().post('/api/v1/teams').send({ name: LONE }),
      'name',
    ],
    ['POST /api/v1/tokens', () => t.http().post('/api/v1/tokens').send({ name: NUL }), 'name'],
    [
      'POST /api/v1/deployments (name)',
      () =>
        t
          .http()
          .post('/api/v1/deployments')
          .send({
            name: NUL,
            model_id: BUILTIN.wordcount,
            args: { text: '00000000-0000-4000-8000-000000000000' },
          }),
      'name',
    ],
    [
      'POST /api/v1/deployments (a key inside args)',
      () =>
        t
          .http()
          .post('/api/v1/deployments')
          .send({ name: 'x', model_id: BUILTIN.wordcount, args: { [NUL]: 1 } }),
      `args.${NUL}`,
    ],
    [
      'POST /api/v1/models (an argument description)',
      () =>
        t
          .http()
          .post('/api/v1/models')
          .send({
            name: 'm',
            container: 'local',
            args: { a: { type: 'string', format: '--a=:value', description: NUL } },
          }),
      'args.a.description',
    ],
    [
      'GET /api/v1/media?tags=',
      () => t.http().get(`/api/v1/media?tags=${encodeURIComponent(NUL)}`),
      'filter.tags.0',
    ],
  ])('%s answers 400 VALIDATION_FAILED naming the field', async (_what, send, field) => {
    const before = await teamNames();
    const res = await send().set('authorization', alice);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(Object.keys(res.body.error.details)).toEqual([field]);
    expect(await teamNames()).toEqual(before);
  });

  it('is refused in GraphQL literals, variables and over websockets alike', async () => {
    const literal = await t.gql('mutation { createTeam(input: { name: "a\\u0000b" }) { id } }', {}, alice);
    expect(literal.status).toBe(400);
    expect(literal.body.errors[0].extensions).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { name: 'must not contain NUL characters' },
    });
    const variables = await t.gql(
      'mutation ($input: CreateTeamInput!) { createTeam(input: $input) { id } }',
      { input: { name: LONE } },
      alice,
    );
    expect(variables.status).toBe(400);
    expect(variables.body.errors[0].extensions).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { name: expect.any(String) },
    });
    const ws = await wsErrors(t, 'subscription ($id: ID!) { jobUpdated(id: $id) { id } }', { id: NUL });
    expect(ws[0].extensions).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { id: 'must not contain NUL characters' },
    });
    const wsMutation = await wsErrors(t, 'mutation { createTeam(input: { name: "a\\u0000b" }) { id } }');
    expect(wsMutation[0].extensions).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect(await teamNames()).not.toContain(NUL);
  });

  it('is refused in an upload’s tags and file name', async () => {
    const tagged = await uploadFile(t, alice, pngBytes(), 'ok.png', NUL);
    expect(tagged.status).toBe(400);
    expect(tagged.body).toMatchObject({
      error: { code: 'VALIDATION_FAILED', details: { tags: expect.any(String) } },
    });
    // A raw NUL in a part's header is a malformed body (names decoded from `filename*` are
    // cleaned of control characters, media.sniff.ts).
    const named = await uploadFile(t, alice, pngBytes(), NUL + '.png');
    expect(named.status).toBe(400);
  });
});

describe('suggestions in production', () => {
  const hidden = (body: unknown) => expect(JSON.stringify(body)).not.toMatch(/Did you mean/);

  it('are hidden for enum values, in literals and variables, over HTTP and websockets', async () => {
    const literal = await prod.gql('{ jobs(filter: { status: RUNNIN }) { nodes { id } } }', {}, alice);
    expect(literal.status).toBe(400);
    expect(literal.body.errors[0].extensions.code).toBe('BAD_REQUEST');
    hidden(literal.body);
    const variable = await prod.gql(
      'query ($s: JobStatus) { jobs(filter: { status: $s }) { nodes { id } } }',
      { s: 'RUNNIN' },
      alice,
    );
    expect(variable.status).toBe(400);
    hidden(variable.body);
    hidden(await wsErrors(prod, 'subscription { jobs { statos } }'));
    hidden(
      await wsErrors(prod, 'query ($s: JobStatus) { jobs(filter: { status: $s }) { nodes { id } } }', {
        s: 'RUNNIN',
      }),
    );
    // Development keeps them: they help whoever writes a query.
    const dev = await t.gql('{ jobs(filter: { status: RUNNIN }) { nodes { id } } }', {}, alice);
    expect(JSON.stringify(dev.body)).toMatch(/Did you mean/);
  });

  it('never reach REST answers', async () => {
    const res = await t
      .http()
      .put('/api/v1/media/00000000-0000-4000-8000-000000000000')
      .set('authorization', alice)
      .send({ tags: [1] });
    hidden(res.body);
  });
});

describe('list inputs', () => {
  it('take only lists, on every route and in GraphQL', async () => {
    const created = await t
      .http()
      .post('/api/v1/models')
      .set('authorization', alice)
      .send({ name: 'listed', container: 'local', args: {}, tags: 'x' });
    expect(created.status).toBe(400);
    expect(created.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { tags: 'must be a list' },
    });
    const model = await t
      .http()
      .post('/api/v1/models')
      .set('authorization', alice)
      .send({ name: 'listed', container: 'local', args: {}, tags: ['x'] });
    expect(model.status).toBe(201);
    const updated = await t
      .http()
      .put(`/api/v1/models/${model.body.id}`)
      .set('authorization', alice)
      .send({ tags: 'y' });
    expect(updated.status).toBe(400);
    expect(updated.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { tags: 'must be a list' },
    });
    const media = (await uploadFile(t, alice, pngBytes())).body.media.id;
    const tagged = await t
      .http()
      .put(`/api/v1/media/${media}`)
      .set('authorization', alice)
      .send({ tags: 'x' });
    expect(tagged.status).toBe(400);
    expect(tagged.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { tags: 'must be a list' },
    });

    const literal = await t.gql(
      `mutation { updateModel(id: "${model.body.id}", input: { tags: "z" }) { tags } }`,
      {},
      alice,
    );
    expect(literal.status).toBe(400);
    expect(literal.body.errors[0].extensions).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { tags: 'must be a list' },
    });
    const variable = await t.gql(
      'mutation ($id: ID!, $input: UpdateModelInput!) { updateModel(id: $id, input: $input) { tags } }',
      { id: model.body.id, input: { tags: 'z' } },
      alice,
    );
    expect(variable.status).toBe(400);
    expect(variable.body.errors[0].extensions).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { tags: 'must be a list' },
    });
    const unchanged = await t.http().get(`/api/v1/models/${model.body.id}`).set('authorization', alice);
    expect(unchanged.body.tags).toEqual(['x']);
  });
});

describe('deeply nested JSON', () => {
  /** `{"a":{"a":...}}`, 100,000 levels: about 500 KB, under the body limit. */
  const DEEP = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000);
  const refused = (res: { status: number; body: { error?: { code?: string } } }) => {
    expect(res.status).toBe(400);
    expect(res.body.error?.code).toBe('VALIDATION_FAILED');
  };

  it.each([
    ['POST', '/api/v1/tokens'],
    ['POST', '/api/v1/teams'],
    ['POST', '/api/v1/models'],
    ['POST', '/api/v1/deployments'],
    ['PUT', '/api/v1/media/:id'],
  ])('%s %s answers 400 VALIDATION_FAILED, whichever body reader reads it', async (method, route) => {
    const before = await teamNames();
    const url = route.replace(':id', (await uploadFile(t, alice, pngBytes())).body.media.id as string);
    for (const type of ['application/json', 'application/service.rest.v1+json']) {
      const res = await t
        .http()
        [method === 'PUT' ? 'put' : 'post'](url)
        .set('authorization', alice)
        .set('content-type', type)
        .send(DEEP);
      refused(res);
      expect(res.body.error.details).toEqual({ body: expect.stringMatching(/deeper than 64 levels/) });
    }
    expect(await teamNames()).toEqual(before);
  });

  it.each(['/api/v1/matrix/user', '/api/v1/matrix/user/login'])(
    'the chat bridge’s POST %s answers 400 VALIDATION_FAILED',
    async (route) => {
      const res = await request(t.bridgeUrl!).post(route).set('content-type', 'application/json').send(DEEP);
      refused(res);
    },
  );

  it('is refused in GraphQL variables, over HTTP and websockets', async () => {
    const query = 'mutation ($input: CreateDeploymentInput!) { createDeployment(input: $input) { id } }';
    // Written out by hand: JSON.stringify itself cannot nest so deep.
    const operation = `{"query":${JSON.stringify(query)},"variables":{"input":{"name":"deep","modelId":"${BUILTIN.wordcount}","args":${DEEP}}}}`;
    const http = await t
      .http()
      .post('/graphql')
      .set('authorization', alice)
      .set('content-type', 'application/json')
      .send(operation);
    expect(http.status).toBe(400);
    expect(http.body.errors[0].extensions.code).toBe('VALIDATION_FAILED');
    const multipart = await t
      .http()
      .post('/graphql')
      .set('authorization', alice)
      .set('apollo-require-preflight', 'true')
      .field('operations', operation)
      .field('map', '{}');
    expect(multipart.status).toBe(400);
    expect(JSON.stringify(multipart.body)).toMatch(/VALIDATION_FAILED/);

    const socket = new WebSocket(`ws://127.0.0.1:${t.port}/graphql`, 'graphql-transport-ws');
    const messages: { type: string; payload?: unknown }[] = [];
    const answer = new Promise<{ type: string; payload?: unknown }>((resolve, reject) => {
      socket.on('message', (data) => {
        const message = JSON.parse(String(data)) as { type: string; payload?: unknown };
        messages.push(message);
        if (message.type === 'connection_ack')
          socket.send(`{"id":"1","type":"subscribe","payload":${operation}}`);
        else resolve(message);
      });
      socket.on('close', (code, reason) => reject(new Error(`closed ${code} ${String(reason)}`)));
    });
    socket.on('open', () =>
      socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: alice } })),
    );
    const message = await answer.finally(() => socket.close());
    expect(message.type).toBe('error');
    expect((message.payload as { extensions: { code: string } }[])[0].extensions.code).toBe(
      'VALIDATION_FAILED',
    );
  });

  it('is refused in a websocket’s connection parameters', async () => {
    const closed = await new Promise<{ code: number; reason: string }>((resolve) => {
      const socket = new WebSocket(`ws://127.0.0.1:${t.port}/graphql`, 'graphql-transport-ws');
      socket.on('open', () =>
        socket.send(`{"type":"connection_init","payload":{"authorization":"${alice}","deep":${DEEP}}}`),
      );
      socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    });
    expect(closed.code).toBe(4400);
    expect(closed.reason).toMatch(/deeper than 64 levels/);
  });
});
