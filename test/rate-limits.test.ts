import { createClient } from 'graphql-ws';
import { Client } from 'pg';
import WebSocket from 'ws';
import { LeasedLimit } from '../src/rate-limits/rate-limit.leases';
import { RateLimit, RateLimited, type Grant } from '../src/rate-limits/rate-limiter';
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

/**
 * Leases: a process takes several points of a hot key's allowance in one upsert and spends them
 * from memory. Limits under 32 are always counted point by point (the suites above).
 */
describe('leases of the allowance', () => {
  const HOT = { ...LIMITS, RATE_LIMIT_PER_MINUTE: '320' };
  let a: TestApp;
  let b: TestApp;
  let db: Client;
  beforeAll(async () => {
    a = await startTestApp(HOT, { issuer: t.issuer });
    b = await startTestApp(HOT, { databaseUrl: a.databaseUrl, issuer: t.issuer });
    db = new Client({ connectionString: a.databaseUrl });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await b?.close();
    await a?.close();
  });

  /** The store's count of a key: points counted so far in its window. */
  const counted = async (key: string) =>
    Number((await db.query('select points from rate_limits where key = $1', [key])).rows[0]?.points ?? 0);
  /** The `requests:` key of a user (its first request, counted). */
  const requestsKeyOf = async (app: TestApp, auth: string) => {
    const me = await app.gql('{ me { id } }', {}, auth);
    expect(me.status).toBe(200);
    return `requests:user:${me.body.data.me.id}`;
  };

  it('a hot key takes growing leases in one process, headers stay exact, and the limit holds', async () => {
    const hot = await bearer('hot');
    const key = await requestsKeyOf(a, hot);
    const counts = new Set<number>([await counted(key)]);
    let leased = 0;
    for (let served = 2; served <= 320; served++) {
      const res = await teams(a, hot);
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-remaining']).toBe(String(320 - served));
      const points = await counted(key);
      // Every point spent was counted before; what is counted beyond is this process's lease.
      expect(points).toBeGreaterThanOrEqual(served);
      expect(points).toBeLessThanOrEqual(320);
      leased = Math.max(leased, points - served);
      counts.add(points);
    }
    // A lease of 20 points (320 / 16) at most, and far fewer upserts than requests.
    expect(leased).toBeGreaterThan(1);
    expect(leased).toBeLessThan(20);
    expect(counts.size).toBeLessThan(320 / 4);
    expect(await counted(key)).toBe(320);
    expectLimited(await teams(a, hot));
    expectLimited(await teams(b, hot));
  });

  it('two processes on one database never serve more than the limit together, and lose nothing', async () => {
    const pair = await bearer('pair');
    let served = 0;
    const refusedBy = new Set<TestApp>();
    // Bursts to both until each has refused: by then neither holds an unspent point.
    while (refusedBy.size < 2) {
      const apps = Array.from({ length: 16 }, (_, i) => (i % 2 ? a : b));
      const answers = await Promise.all(apps.map((app) => teams(app, pair)));
      answers.forEach((res, i) => {
        expect([200, 429]).toContain(res.status);
        if (res.status === 200) served++;
        else refusedBy.add(apps[i]);
      });
    }
    expect(served).toBe(320);
  });
});

describe('a leased limit, on the store itself', () => {
  const limitOf = (name: string, points: number, windowSeconds = 60, maxKeys?: number) => {
    const store = new RateLimit(t.runtime.orm, { name, points, windowSeconds });
    return { store, leases: new LeasedLimit(store, `too many ${name}`, maxKeys) };
  };
  const rowOf = async (key: string) =>
    (
      await t.runtime.orm.em.fork().execute('select points, expire from rate_limits where key = ?', [key])
    )[0] as { points: number; expire: string } | undefined;

  it('requests arriving while a lease is fetched share the fetch', async () => {
    const { store, leases } = limitOf('burst', 1000);
    const grants = jest.spyOn(store, 'lease');
    const states = await Promise.all(Array.from({ length: 20 }, () => leases.take('k')));
    // Cold: one point; then one grant for the 19 that waited for it.
    expect(grants.mock.calls.map((c) => c[1])).toEqual([1, 19]);
    expect((await rowOf('burst:k'))?.points).toBe(20);
    expect(states.map((s) => s.remaining).sort((x, y) => y - x)).toEqual(
      Array.from({ length: 20 }, (_, i) => 999 - i),
    );
  });

  it('shrinks grants near the limit and never spends what the store did not grant', async () => {
    const { store, leases } = limitOf('edge', 64);
    const grants = jest.spyOn(store, 'lease');
    // Another process spends most of the window meanwhile: grants it asks for no longer fit.
    await leases.take('k');
    await leases.take('k');
    await store.take('k', 'elsewhere', 58);
    const served = [];
    for (;;) {
      try {
        served.push(await leases.take('k'));
      } catch (err) {
        expect(err).toBeInstanceOf(RateLimited);
        break;
      }
    }
    expect(2 + served.length + 58).toBe(64);
    // 4 (64 / 16) did not fit in the 3 left: one point instead; then grants of 1 (3 / 8 < 1).
    expect(grants.mock.calls.map((c) => c[1])).toEqual([1, 2, 4, 1, 1, 1]);
    const granted = await Promise.allSettled(grants.mock.results.map((r) => r.value as Promise<Grant>));
    expect(granted.map((g) => (g.status === 'fulfilled' ? g.value.granted : 0))).toEqual([1, 2, 1, 1, 1, 0]);
  });

  it('a lease ends with its window, and ended windows leave the map', async () => {
    const { leases } = limitOf('window', 64, 1);
    for (let i = 0; i < 4; i++) await leases.take('k'); // grants of 1 and 2, then 4: 3 left
    await leases.take('other');
    const counted = (await rowOf('window:k'))!;
    expect(counted.points).toBe(7);
    while (Date.now() <= Number(counted.expire)) await new Promise((r) => setTimeout(r, 50));
    // Its unspent points are gone with the window; the key starts cold again.
    expect(leases.fromLease('k')).toBeNull();
    expect((await leases.take('k')).remaining).toBe(63);
    expect((await rowOf('window:k'))?.points).toBe(1);
    await leases.take('third');
    expect(leases.size).toBe(2); // 'other' was dropped
  });

  it('holds at most its bound of keys', async () => {
    const { leases } = limitOf('bound', 64, 60, 3);
    for (let i = 0; i < 10; i++) {
      await leases.take(`k${i}`);
      expect(leases.size).toBeLessThanOrEqual(3);
    }
    expect(leases.fromLease('k9')).toBeNull(); // a lease of 1 point, spent
    expect((await leases.take('k9')).remaining).toBe(62);
  });
});
