import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { startTestApp, type TestApp } from './helpers/app';
import { BUILTIN } from './helpers/jobs';
import { pngBytes, uploadFile } from './helpers/media';

/** Per-principal limits, shared through PostgreSQL by every process on the database. */

const LIMITS = {
  RATE_LIMIT_PER_MINUTE: '8',
  RATE_LIMIT_UPLOADS_PER_MINUTE: '2',
  RATE_LIMIT_DEPLOYMENTS_PER_MINUTE: '2',
  LOCAL_EXECUTOR_TRUST: 'any',
};

let t: TestApp;
let other: TestApp;
beforeAll(async () => {
  t = await startTestApp(LIMITS);
  // A second process on the same database: the same counters.
  other = await startTestApp(LIMITS, { databaseUrl: t.databaseUrl, issuer: t.issuer });
});
afterAll(async () => {
  await other?.close();
  await t?.close();
});

const bearer = async (sub: string) => `Bearer ${await t.tokenFor(sub)}`;
const teams = (app: TestApp, auth?: string) => {
  const req = app.http().get('/api/v1/teams');
  return auth ? req.set('authorization', auth) : req;
};

function expectLimited(res: {
  status: number;
  body: { error?: { code: string } };
  headers: Record<string, string>;
}) {
  expect(res.status).toBe(429);
  expect(res.body.error?.code).toBe('RATE_LIMITED');
  const retryAfter = Number(res.headers['retry-after']);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expect(res.headers['ratelimit-remaining']).toBe('0');
}

describe('requests per principal', () => {
  it('counts down in RateLimit-* headers, then answers 429 RATE_LIMITED with Retry-After', async () => {
    const alice = await bearer('alice');
    for (let i = 1; i <= 8; i++) {
      const res = await teams(t, alice);
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-limit']).toBe('8');
      expect(res.headers['ratelimit-remaining']).toBe(String(8 - i));
      expect(Number(res.headers['ratelimit-reset'])).toBeLessThanOrEqual(60);
      expect(res.headers['ratelimit-policy']).toBe('8;w=60');
    }
    const refused = await teams(t, alice);
    expectLimited(refused);
    expect(refused.body.error.message).toBe('too many requests');
    // GraphQL spends the same allowance; refused before it runs, like a bad credential is.
    expectLimited(await t.gql('{ teams { nodes { id } } }', {}, alice));
    // Someone else is not affected.
    expect((await teams(t, await bearer('bob'))).status).toBe(200);
  });

  it('is shared by every process on the database', async () => {
    const carol = await bearer('carol');
    for (let i = 0; i < 4; i++) {
      expect((await teams(t, carol)).status).toBe(200);
      expect((await teams(other, carol)).status).toBe(200);
    }
    expectLimited(await teams(other, carol));
    expectLimited(await teams(t, carol));
  });

  it('never lets concurrent requests overshoot', async () => {
    const dave = await bearer('dave');
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => teams(i % 2 ? t : other, dave)));
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(8);
    expect(statuses.filter((s) => s === 429)).toHaveLength(12);
  });

  it('counts anonymous requests per client address', async () => {
    for (let i = 0; i < 8; i++) expect((await teams(t)).status).toBe(401);
    expectLimited(await teams(t));
  });

  it('counts the operations of a websocket too', async () => {
    const erin = await bearer('erin');
    const client = createClient({
      url: `ws://127.0.0.1:${t.port}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: erin },
      retryAttempts: 0,
    });
    const run = () =>
      new Promise<{ data?: unknown; errors?: { extensions?: { code?: string } }[] }>((resolve) => {
        let result: { data?: unknown; errors?: { extensions?: { code?: string } }[] } = {};
        client.subscribe(
          { query: '{ teams { nodes { id } } }' },
          {
            next: (r) => (result = r as typeof result),
            error: (errors) => resolve({ errors: errors as typeof result.errors }),
            complete: () => resolve(result),
          },
        );
      });
    try {
      for (let i = 0; i < 8; i++) expect((await run()).data).toBeDefined();
      const refused = await run();
      expect(refused.errors?.[0].extensions?.code).toBe('RATE_LIMITED');
    } finally {
      await client.dispose();
    }
  });
});

describe('uploads and deployments have their own limits', () => {
  const png = pngBytes(4, 4);

  it('uploads: over REST and GraphQL together', async () => {
    const frank = await bearer('frank');
    expect((await uploadFile(t, frank, png)).status).toBe(200);
    expect((await uploadFile(other, frank, png)).status).toBe(200);
    const third = await t
      .http()
      .post('/uploads/upload')
      .set('authorization', frank)
      .attach('file', png, 'x.png');
    expectLimited(third);
    expect(third.body.error.message).toBe('too many uploads');
    const gql = await t
      .http()
      .post('/graphql')
      .set('authorization', frank)
      .set('apollo-require-preflight', 'true')
      .field(
        'operations',
        JSON.stringify({
          query: 'mutation ($f: Upload!) { uploadMedia(file: $f) { id } }',
          variables: { f: null },
        }),
      )
      .field('map', JSON.stringify({ 0: ['variables.f'] }))
      .attach('0', png, 'g.png');
    expectLimited(gql);
    // Other requests of the same principal still pass.
    expect((await teams(t, frank)).status).toBe(200);
  });

  it('deployment creation: over REST and GraphQL together, aliases included', async () => {
    const grace = await bearer('grace');
    const media = (await uploadFile(t, grace, png)).body.media.id;
    const body = { name: 'count', model_id: BUILTIN.wordcount, args: { text: media } };
    const rest = () => t.http().post('/api/v1/deployments').set('authorization', grace).send(body);
    expect((await rest()).status).toBe(201);
    const twice = await t.gql(
      `mutation ($i: CreateDeploymentInput!) { a: createDeployment(input: $i) { id } b: createDeployment(input: $i) { id } }`,
      { i: { name: 'count', modelId: BUILTIN.wordcount, args: { text: media } } },
      grace,
    );
    // The first alias ran; the second was refused (and, being non-null, took `data` with it).
    expect(twice.body.errors.map((e: { extensions: { code: string } }) => e.extensions.code)).toEqual([
      'RATE_LIMITED',
    ]);
    expect(twice.status).toBe(429);
    expect(Number(twice.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    const refused = await rest();
    expectLimited(refused);
    expect(refused.body.error.message).toBe('too many deployments; try again shortly');
    const jobs = await t.http().get('/api/v1/jobs').set('authorization', grace);
    expect(jobs.body).toHaveLength(2);
  });
});
