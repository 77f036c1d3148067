import { createClient, type Client } from 'graphql-ws';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import WebSocket from 'ws';
import { isDatabaseUnavailable } from '../src/common/errors';
import { startTestApp, type TestApp } from './helpers/app';
import { alive, deploy, waitForJob } from './helpers/jobs';
import { pngBytes, uploadFile } from './helpers/media';
import { startOwnPostgres, type OwnPostgres } from './helpers/pg-server';

jest.setTimeout(240_000);

const PROGRAM = path.join(__dirname, 'fixtures', 'job-program.js');
/** The bound under test: short, so that the outage tests stay short. */
const QUERY_TIMEOUT_MS = 1500;

let pg: OwnPostgres;
let t: TestApp;
let auth: string;
let gateModel: string;
let argvModel: string;
/** The METRICS_PORT listener's URL. */
let metricsUrl: string;

beforeAll(async () => {
  pg = await startOwnPostgres();
  t = await startTestApp(
    { DATABASE_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS), LOCAL_EXECUTOR_TRUST: 'any' },
    { databaseUrl: pg.url },
  );
  auth = `Bearer ${await t.tokenFor('outage')}`;
  const model = async (mode: string) => {
    const res = await t
      .http()
      .post('/api/v1/models')
      .set('authorization', auth)
      .send({
        name: `program ${mode}`,
        container: 'local',
        command: `node "${PROGRAM}" ${mode} {args}`,
        args: {},
      });
    if (res.status !== 201) throw new Error(JSON.stringify(res.body));
    return res.body.id as string;
  };
  metricsUrl = `http://127.0.0.1:${await t.runtime.metricsServer.listen(0, '127.0.0.1')}`;
  gateModel = await model('gate');
  argvModel = await model('argv');
  expect((await uploadFile(t, auth, pngBytes())).status).toBe(200);
});

afterAll(async () => {
  await t?.close();
  await pg?.remove();
});

function connect(): Client {
  return createClient({
    url: `ws://127.0.0.1:${t.port}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: auth },
    retryAttempts: 0,
  });
}

/**
 * A `jobUpdated(id)` subscription: `started` resolves with its first state, `statuses` with all it
 * showed once it completes.
 */
async function watchJob(client: Client, id: string): Promise<{ statuses: Promise<string[]> }> {
  const statuses: string[] = [];
  let started!: () => void;
  const first = new Promise<void>((r) => (started = r));
  const all = new Promise<string[]>((resolve, reject) => {
    client.subscribe<{ jobUpdated: { status: string } }>(
      { query: 'subscription ($id: ID!) { jobUpdated(id: $id) { status } }', variables: { id } },
      {
        next: (v) => {
          if (v.errors) return reject(new Error(JSON.stringify(v.errors)));
          statuses.push(v.data!.jobUpdated.status);
          started();
        },
        error: reject,
        complete: () => resolve(statuses),
      },
    );
  });
  await Promise.race([first, all]);
  return { statuses: all };
}

/** A job of the gate program, running: its id, its process id, and how to let it finish. */
async function gatedJob(): Promise<{ id: string; pid: number; open: () => void }> {
  const { jobId } = await deploy(t, auth, gateModel, {});
  const job = await waitForJob(t, auth, jobId, (j) => !['QUEUED', 'STARTING'].includes(j.status));
  expect(job.status).toBe('RUNNING');
  const pid = Number(job.externalId);
  return {
    id: jobId,
    pid,
    open: () => writeFileSync(path.join(t.config.dataDir, 'jobs', jobId, 'go'), ''),
  };
}

/** Requests of every kind while the database is away: each answers 503 UNAVAILABLE. */
async function expectUnavailable(): Promise<void> {
  const rest = () => t.http().get('/api/v1/media').set('authorization', auth);
  const answers = await Promise.all([
    // More than the pool holds: some wait for a connection, some need a new one.
    ...Array.from({ length: 14 }, rest),
    t.http().post('/api/v1/teams').set('authorization', auth).send({ name: 'during' }),
  ]);
  for (const res of answers) {
    expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 503, code: 'UNAVAILABLE' });
    expect(res.headers['retry-after']).toMatch(/^\d+$/);
  }
  // GraphQL over HTTP: the rate limiter, which needs the database to count a request its process
  // holds no leased point for, answers before the GraphQL layer, in the error body that answers
  // 401 and 429 there too, with the code also in a GraphQL request error's extensions. A request
  // served from a lease gets the same code from its own statements.
  for (const [gql, byLimiter] of [
    [await t.gql('{ media { nodes { id } } }', {}, auth), false],
    // Needs nothing of the database but the count (anonymous: by address, never served in this
    // file, so no lease): the same 503, not a wait for the bound and then an answer.
    [await t.gql('{ __typename }'), true],
  ] as const) {
    expect(gql.status).toBe(503);
    if (byLimiter) expect(gql.body.error?.code).toBe('UNAVAILABLE');
    expect(gql.body.errors[0].extensions).toMatchObject({
      code: 'UNAVAILABLE',
      retryAfterSeconds: expect.any(Number),
    });
    expect(gql.headers['retry-after']).toMatch(/^\d+$/);
  }
  for (const ready of [await t.http().get('/readyz'), await request(metricsUrl).get('/readyz')]) {
    expect(ready.status).toBe(503);
    expect(ready.body.error.code).toBe('UNAVAILABLE');
    expect(ready.headers['retry-after']).toMatch(/^\d+$/);
  }
  // Over a websocket, each operation is counted like a request: a GraphQL error, extensions.code.
  const client = createClient({
    url: `ws://127.0.0.1:${t.port}/graphql`,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
  });
  try {
    const errors = await new Promise<unknown>((resolve, reject) =>
      client.subscribe(
        { query: '{ __typename }' },
        {
          next: () => reject(new Error('answered during the outage')),
          error: resolve,
          complete: () => undefined,
        },
      ),
    );
    expect(errors).toEqual([
      expect.objectContaining({
        extensions: expect.objectContaining({ code: 'UNAVAILABLE', retryAfterSeconds: expect.any(Number) }),
      }),
    ]);
  } finally {
    await client.dispose();
  }
}

/**
 * A principal whose process holds leased points of its request allowance (docs/operations.md,
 * "Rate limits"): how many, read from the store's count.
 */
let holders = 0;
async function leaseHolder(): Promise<{ auth: string; points: number }> {
  const holderAuth = `Bearer ${await t.tokenFor(`holder-${++holders}`)}`;
  const me = await t.gql('{ me { id } }', {}, holderAuth);
  const key = `requests:user:${me.body.data.me.id}`;
  const counted = async () =>
    ((await t.runtime.orm.em.fork().execute('select points from rate_limits where key = ?', [key]))[0]
      ?.points as number) ?? 0;
  // Grants of 1, 2, 4...: after a few requests, points counted beyond those served are its lease.
  for (let served = 1; ; served++) {
    const points = (await counted()) - served;
    if (points >= 2) return { auth: holderAuth, points };
    expect((await t.gql('{ __typename }', {}, holderAuth)).status).toBe(200);
  }
}

/**
 * During an outage, a request its process holds a leased point for is served: its point was
 * counted before. Past the lease, the next is refused 503 by the limiter, which cannot count it.
 */
async function expectLeaseServed(holder: { auth: string; points: number }): Promise<void> {
  // Past the limiter, a request that needs the database gets 503 from its own statements.
  const media = await t.gql('{ media { nodes { id } } }', {}, holder.auth);
  expect({ status: media.status, limiter: media.body.error }).toEqual({ status: 503, limiter: undefined });
  expect(media.body.errors[0].extensions).toMatchObject({ code: 'UNAVAILABLE', retryAfterSeconds: 5 });
  for (let i = 1; i < holder.points; i++) {
    const res = await t.gql('{ __typename }', {}, holder.auth);
    expect({ status: res.status, data: res.body.data }).toEqual({
      status: 200,
      data: { __typename: 'Query' },
    });
  }
  const refused = await t.gql('{ __typename }', {}, holder.auth);
  expect({ status: refused.status, code: refused.body.error?.code }).toEqual({
    status: 503,
    code: 'UNAVAILABLE',
  });
}

async function waitUntilReady(): Promise<void> {
  for (;;) {
    if ((await t.http().get('/readyz')).status === 200) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** After an outage: requests answer, and a new job runs to its end (the queue's worker carries on). */
async function expectRecovered(): Promise<void> {
  await waitUntilReady();
  const media = await t.http().get('/api/v1/media').set('authorization', auth);
  expect(media.status).toBe(200);
  const { jobId } = await deploy(t, auth, argvModel, {});
  expect((await waitForJob(t, auth, jobId)).status).toBe('SUCCEEDED');
}

describe('a database outage', () => {
  it('discards a connection whose query does not answer in time, and never hands it out again', async () => {
    const orm = t.runtime.orm;
    let stuckPid = 0;
    const err = await orm.em
      .fork()
      .transactional(async (em) => {
        // Past the server's own statement timeout: only the client-side bound can end it.
        await em.execute('set local statement_timeout = 0');
        stuckPid = (await em.execute('select pg_backend_pid() as pid'))[0].pid;
        await em.execute('select pg_sleep(60)');
      })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(isDatabaseUnavailable(err)).toBe(true);
    // Every connection the pool hands out now is another one, and answers.
    const pids = await Promise.all(
      Array.from(
        { length: 12 },
        async () => (await orm.em.fork().execute('select pg_backend_pid() as pid'))[0].pid,
      ),
    );
    expect(pids).not.toContain(stuckPid);
  });

  /**
   * An outage from `begin` to `end`, with a job running into it: every request answers 503 during
   * it; the job's program ends during it; afterwards the job is recorded as it ended, its
   * subscriber sees the end, and the service carries on.
   */
  async function outage(begin: () => Promise<void>, end: () => Promise<void>): Promise<void> {
    await expectRecovered();
    const client = connect();
    try {
      const gated = await gatedJob();
      const updates = (await watchJob(client, gated.id)).statuses;
      const holder = await leaseHolder();
      await begin();
      try {
        await expectLeaseServed(holder);
        await expectUnavailable();
        gated.open();
        while (alive(gated.pid)) await new Promise((r) => setTimeout(r, 50));
        // Long enough for the worker, the event bus and the queue to run into the outage too.
        await new Promise((r) => setTimeout(r, 3 * QUERY_TIMEOUT_MS));
        await expectUnavailable();
      } finally {
        await end();
      }
      const job = await waitForJob(t, auth, gated.id);
      expect(job.status).toBe('SUCCEEDED');
      expect(job.resultUrls).toHaveLength(1);
      expect(await updates).toEqual(['RUNNING', 'SUCCEEDED']);
      await expectRecovered();
    } finally {
      await client.dispose();
    }
  }

  it('frozen (SIGSTOP): every request answers 503 within the bound; a job that ends meanwhile is recorded after it', () =>
    outage(pg.freeze, pg.thaw));

  it('stopped and started again: the same', () => outage(pg.stop, pg.start));
});
