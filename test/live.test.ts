import { createClient, type Client } from 'graphql-ws';
import { Client as PgClient } from 'pg';
import WebSocket from 'ws';
import { openOrm, type Orm } from '../src/db/orm';
import { entities } from '../src/server/entities';
import { JobQueries } from '../src/jobs/job.queries';
import { JobService } from '../src/jobs/job.service';
import { JobStore } from '../src/jobs/job.store';
import { jobStatementParts } from '../src/server/services';
import { startTestApp, type TestApp } from './helpers/app';
import { alive, deploy, PROGRAM, programModel } from './helpers/jobs';
import { until } from './helpers/media';
import { readEvents } from './helpers/sse';
import { WebhookReceiver } from './helpers/webhook-receiver';

jest.setTimeout(240_000);

let t: TestApp;
let alice: string;
let bob: string;
let trivial: string;

const SEQUENCE = ['QUEUED', 'STARTING', 'RUNNING', 'SUCCEEDED'];

beforeAll(async () => {
  t = await startTestApp({ LOCAL_EXECUTOR_TRUST: 'any', LOCAL_EXECUTOR_CONCURRENCY: '2' });
  alice = `Bearer ${await t.tokenFor('alice')}`;
  bob = `Bearer ${await t.tokenFor('bob')}`;
  const res = await t
    .http()
    .post('/api/v1/models')
    .set('authorization', alice)
    .send({ name: 'trivial', container: 'local', command: 'true {args}', args: {} });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  trivial = res.body.id;
});
afterAll(() => t.close());

function connect(app: TestApp, auth: string): Client {
  return createClient({
    url: `ws://127.0.0.1:${app.port}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: auth },
    retryAttempts: 0,
  });
}

/** Rejects when `promise` has not settled after `ms`: a test waiting for something that never comes fails, and says what. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer!: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>(
      (_, reject) => (timer = setTimeout(() => reject(new Error(`never came: ${what}`)), ms)),
    ),
  ]);
}

/** Subscribes and collects the values until the subscription completes or `stop` says so. */
function collect<T>(
  client: Client,
  query: string,
  variables: Record<string, unknown> = {},
  stop: (values: T[]) => boolean = () => false,
): { values: T[]; done: Promise<T[]>; started: Promise<void>; dispose: () => void } {
  const values: T[] = [];
  let dispose = () => undefined as void;
  let started!: () => void;
  const startedP = new Promise<void>((r) => (started = r));
  const done = new Promise<T[]>((resolve, reject) => {
    dispose = client.subscribe<T>(
      { query, variables },
      {
        next: (v) => {
          if (v.errors) return reject(new Error(JSON.stringify(v.errors)));
          values.push(v.data as T);
          started();
          if (stop(values)) {
            dispose();
            resolve(values);
          }
        },
        error: reject,
        complete: () => resolve(values),
      },
    );
  });
  return { values, done, started: startedP, dispose: () => dispose() };
}

/** Waits until the server holds `count` subscriptions. */
async function registered(app: TestApp, count: number): Promise<void> {
  while (app.runtime.services.live.subscriberCount() < count) await new Promise((r) => setTimeout(r, 20));
}

describe('jobUpdated(id)', () => {
  it('shows each state exactly once and in order, however the subscription races the job (300 tries)', async () => {
    const client = connect(t, alice);
    const problems: string[] = [];
    try {
      const attempt = async (i: number) => {
        const { jobId } = await deploy(t, alice, trivial, {});
        // Subscribing at different moments of the job's short life; half the subscriptions are
        // answered from the event payloads, half need the job read (logTail is never in them).
        await new Promise((r) => setTimeout(r, (i % 7) * 3));
        const fields = i % 2 ? 'status' : 'status logTail';
        const seen = await within(
          collect<{ jobUpdated: { status: string } }>(
            client,
            `subscription ($id: ID!) { jobUpdated(id: $id) { ${fields} } }`,
            { id: jobId },
          ).done,
          60_000,
          `the end of job ${jobId}`,
        );
        const statuses = seen.map((v) => v.jobUpdated.status);
        if (statuses.join() !== SEQUENCE.slice(SEQUENCE.length - statuses.length).join())
          problems.push(`${jobId}: ${statuses.join(', ')}`);
      };
      for (let i = 0; i < 300; i += 6) await Promise.all(Array.from({ length: 6 }, (_, k) => attempt(i + k)));
    } finally {
      await client.dispose();
    }
    expect(problems).toEqual([]);
  });
});

describe('event fan-out', () => {
  it('reads a job once per event for all the subscribers that need it, none for those answered from the event', async () => {
    let recording: string[] | null = null;
    const reader = await startTestApp(
      { ROLES: 'api' },
      { databaseUrl: t.databaseUrl, issuer: t.issuer, onQuery: (sql) => recording?.push(sql) },
    );
    const clients = [connect(reader, alice), connect(reader, alice), connect(reader, bob)];
    try {
      const SUBSCRIBERS = 20;
      const done = (v: { jobs: { status: string } }[]) => v.some((x) => x.jobs.status === 'SUCCEEDED');
      const answered = Array.from({ length: SUBSCRIBERS }, () =>
        collect(clients[0], 'subscription { jobs { id status createdAt } }', {}, done),
      );
      const reading = Array.from({ length: SUBSCRIBERS }, () =>
        collect(clients[1], 'subscription { jobs { id status logTail } }', {}, done),
      );
      const foreign = collect<{ jobs: { id: string } }>(clients[2], 'subscription { jobs { id } }');
      await registered(reader, 2 * SUBSCRIBERS + 1);
      recording = [];
      const { jobId } = await deploy(t, alice, trivial, {});
      const all = await within(
        Promise.all([...answered, ...reading].map((s) => s.done)),
        60_000,
        'SUCCEEDED',
      );
      const reads = recording.filter((sql) => /from "jobs"/.test(sql)).length;
      recording = null;
      for (const values of all)
        expect(
          (values as { jobs: { id: string; status: string } }[]).map((v) => [v.jobs.id, v.jobs.status]),
        ).toEqual(SEQUENCE.map((s) => [jobId, s]));
      // One read per event (four of them) for the twenty subscribers that need the job.
      expect(reads).toBe(SEQUENCE.length);
      // Tenancy: the other owner's subscription heard nothing of it.
      expect(foreign.values).toEqual([]);
    } finally {
      await Promise.all(clients.map((c) => c.dispose()));
      await reader.close();
    }
  });

  it('answers from the event what the job read would answer', async () => {
    const fields =
      'id deploymentId modelId status executor externalId command container machineType machineCount timeoutSeconds exitCode error queueSeconds runSeconds result resultUrls createdAt startedAt finishedAt updatedAt model { id } deployment { id } outputs { id } transitions { to }';
    const client = connect(t, alice);
    try {
      const { jobId } = await deploy(t, alice, trivial, {});
      const fromEvent = collect<{ jobUpdated: Record<string, unknown> }>(
        client,
        `subscription ($id: ID!) { jobUpdated(id: $id) { ${fields} } }`,
        { id: jobId },
      );
      const fromRow = collect<{ jobUpdated: Record<string, unknown> }>(
        client,
        `subscription ($id: ID!) { jobUpdated(id: $id) { ${fields} logTail } }`,
        { id: jobId },
      );
      const [a, b] = await within(Promise.all([fromEvent.done, fromRow.done]), 60_000, 'the job to end');
      const { logTail: _, ...last } = b.at(-1)!.jobUpdated;
      expect(a.at(-1)!.jobUpdated).toEqual(last);
      expect(last.status).toBe('SUCCEEDED');
      const job = await t.gql(`query ($id: ID!) { job(id: $id) { ${fields} } }`, { id: jobId }, alice);
      expect(a.at(-1)!.jobUpdated).toEqual(job.body.data.job);
    } finally {
      await client.dispose();
    }
  });
});

describe('a gap in the event connection', () => {
  it('is read back after the reconnection: open subscriptions show what changed meanwhile', async () => {
    // A database of its own without a worker: its jobs stay queued, so that only the test moves them.
    const app = await startTestApp({ ROLES: 'api', LOCAL_EXECUTOR_TRUST: 'any' }, { issuer: t.issuer });
    const database = new URL(app.databaseUrl).pathname.slice(1);
    const model = await app
      .http()
      .post('/api/v1/models')
      .set('authorization', alice)
      .send({ name: 'trivial', container: 'local', command: 'true {args}', args: {} });
    const admin = new PgClient({ connectionString: process.env.TEST_PG_ADMIN_URL });
    await admin.connect();
    let other: Orm | null = null;
    const client = connect(app, alice);
    try {
      const a = await deploy(app, alice, model.body.id, {});
      const b = await deploy(app, alice, model.body.id, {});
      const all = collect<{ jobs: { id: string; status: string } }>(
        client,
        'subscription { jobs { id status } }',
        {},
        (v) => v.filter((x) => x.jobs.status === 'CANCELED').length === 2,
      );
      const one = collect<{ jobUpdated: { status: string; logTail: string } }>(
        client,
        'subscription ($id: ID!) { jobUpdated(id: $id) { status logTail } }',
        { id: a.jobId },
      );
      const logs = collect(client, 'subscription ($id: ID!) { jobLogs(id: $id) { line } }', { id: a.jobId });
      await one.started;
      await registered(app, 3);
      // The jobs move while the service's listening connection is gone and cannot come back: on
      // a connection of another process (opened before), as another worker would move them.
      other = await openOrm({ clientUrl: app.databaseUrl, entities });
      await other.em.fork().execute('select 1');
      await admin.query(`alter database ${database} allow_connections false`);
      await admin.query(
        `select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and application_name = 'media-platform-events' and backend_type = 'client backend'`,
        [database],
      );
      const jobs = new JobService(new JobStore(other, jobStatementParts(null)), new JobQueries(other));
      expect(await jobs.transition(a.jobId, 'canceled')).not.toBeNull();
      expect(await jobs.transition(b.jobId, 'canceled')).not.toBeNull();
      await admin.query(`alter database ${database} allow_connections true`);

      const seen = await within(all.done, 60_000, 'the canceled jobs on `jobs`');
      expect(seen.filter((v) => v.jobs.id === a.jobId).map((v) => v.jobs.status)).toEqual(['CANCELED']);
      expect(seen.filter((v) => v.jobs.id === b.jobId).map((v) => v.jobs.status)).toEqual(['CANCELED']);
      const updates = await within(one.done, 60_000, 'the canceled job on `jobUpdated`');
      expect(updates.map((v) => v.jobUpdated.status)).toEqual(['QUEUED', 'CANCELED']);
      expect(await within(logs.done, 60_000, 'the end of `jobLogs`')).toEqual([]);
    } finally {
      await admin.query(`alter database ${database} allow_connections true`);
      await admin.end();
      await client.dispose();
      await other?.close(true);
      await app.close();
    }
  });

  it('hands many subscribers all the events of a gap in order, each once, several per subscriber at once', async () => {
    const app = await startTestApp({ ROLES: 'api', LOCAL_EXECUTOR_TRUST: 'any' }, { issuer: t.issuer });
    const database = new URL(app.databaseUrl).pathname.slice(1);
    const model = await app
      .http()
      .post('/api/v1/models')
      .set('authorization', alice)
      .send({ name: 'trivial', container: 'local', command: 'true {args}', args: {} });
    const admin = new PgClient({ connectionString: process.env.TEST_PG_ADMIN_URL });
    await admin.connect();
    let other: Orm | null = null;
    const clients = [connect(app, alice), connect(app, alice), connect(app, bob)];
    try {
      const a = await deploy(app, alice, model.body.id, {});
      const b = await deploy(app, alice, model.body.id, {});
      type Jobs = { jobs: { id: string; status: string } };
      // Enough subscriptions that the hub hands the gap's events out over several turns.
      const PER = 60;
      const subscribers = Array.from({ length: PER * 2 }, (_, i) =>
        collect<Jobs>(
          clients[i % 2],
          i % 3 ? 'subscription { jobs { id status } }' : 'subscription { jobs { status id createdAt } }',
          {},
          (v) =>
            v.some((x) => x.jobs.id === a.jobId && x.jobs.status === 'SUCCEEDED') &&
            v.some((x) => x.jobs.status === 'CANCELED'),
        ),
      );
      // bob's subscription hears none of alice's jobs.
      const bobs = collect<Jobs>(clients[2], 'subscription { jobs { id status } }');
      await registered(app, PER * 2 + 1);
      other = await openOrm({ clientUrl: app.databaseUrl, entities });
      await other.em.fork().execute('select 1');
      await admin.query(`alter database ${database} allow_connections false`);
      await admin.query(
        `select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and application_name = 'media-platform-events' and backend_type = 'client backend'`,
        [database],
      );
      // Four events in the gap, three of one job: all read back together.
      const jobs = new JobService(new JobStore(other, jobStatementParts(null)), new JobQueries(other));
      expect(await jobs.transition(a.jobId, 'starting')).not.toBeNull();
      expect(await jobs.transition(b.jobId, 'canceled')).not.toBeNull();
      expect(await jobs.transition(a.jobId, 'running')).not.toBeNull();
      expect(await jobs.transition(a.jobId, 'succeeded', { exitCode: 0 })).not.toBeNull();
      await admin.query(`alter database ${database} allow_connections true`);

      const seen = await within(
        Promise.all(subscribers.map((s) => s.done)),
        60_000,
        'the gap on every subscription',
      );
      for (const values of seen) {
        expect(values.filter((v) => v.jobs.id === a.jobId).map((v) => v.jobs.status)).toEqual([
          'STARTING',
          'RUNNING',
          'SUCCEEDED',
        ]);
        expect(values.filter((v) => v.jobs.id === b.jobId).map((v) => v.jobs.status)).toEqual(['CANCELED']);
        expect(values).toHaveLength(4);
      }
      expect(bobs.values).toEqual([]);
      bobs.dispose();
    } finally {
      await admin.query(`alter database ${database} allow_connections true`);
      await admin.end();
      await Promise.all(clients.map((c) => c.dispose()));
      await other?.close(true);
      await app.close();
    }
  });

  it('leaves no consumer stale: subscriptions, event streams, a waiting request and webhooks all see the jobs end', async () => {
    const receiver = await WebhookReceiver.start();
    const app = await startTestApp(
      {
        ROLES: 'api,worker',
        LOCAL_EXECUTOR_TRUST: 'any',
        LOCAL_EXECUTOR_CONCURRENCY: '4',
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_ALLOW_PRIVATE: `127.0.0.1:${receiver.port}`,
      },
      { issuer: t.issuer },
    );
    const database = new URL(app.databaseUrl).pathname.slice(1);
    const admin = new PgClient({ connectionString: process.env.TEST_PG_ADMIN_URL });
    await admin.connect();
    const listener = `from pg_stat_activity where datname = $1 and application_name = 'media-platform-events' and backend_type = 'client backend'`;
    let other: Orm | null = null;
    const client = connect(app, alice);
    try {
      // The worker's own listener.
      const listeners = app.runtime.services.events.listenerCount();
      // Jobs that run until they are stopped, each with a webhook for its end.
      const idle = await programModel(app, alice, 'idle');
      const hook = receiver.url('/gap');
      const create = async () => {
        const res = await app.gql(
          'mutation ($input: CreateDeploymentInput!) { createDeployment(input: $input) { job { id } } }',
          { input: { name: 'gap', modelId: idle, args: {}, webhook: hook } },
          alice,
        );
        return res.body.data.createDeployment.job.id as string;
      };
      const ids = [await create(), await create()];
      // A job of the same owner that keeps printing: its events keep coming while the connection is set up again.
      const chatty = await programModel(app, alice, 'lines', {
        command: `node "${PROGRAM}" lines 100000 5 {args}`,
      });
      const chatter = await deploy(app, alice, chatty, {});
      // A synchronous run: the request waits for its job's end.
      const waiting = app
        .http()
        .post('/api/v1/deployments')
        .set('authorization', alice)
        .set('prefer', 'wait=60')
        .send({ name: 'gap wait', model_id: idle, args: {}, webhook: hook })
        .then((res) => res);
      for (;;) {
        const listed = await app.http().get('/api/v1/jobs?limit=10').set('authorization', alice);
        const found = (listed.body as { id: string }[]).find(
          (j) => !ids.includes(j.id) && j.id !== chatter.jobId,
        );
        if (found) {
          ids.push(found.id);
          break;
        }
        await new Promise((r) => setTimeout(r, 50));
      }

      // Their processes, which the worker must stop once it hears of the ends.
      const pids: number[] = [];
      for (const id of ids) {
        const running = await until(
          async () => (await app.http().get(`/api/v1/jobs/${id}`).set('authorization', alice)).body,
          (j) => j.status === 'running' && j.external_id !== null,
          60_000,
        );
        expect(running.status).toBe('running');
        pids.push(Number(running.external_id));
      }

      const all = collect<{ jobs: { id: string; status: string } }>(
        client,
        'subscription { jobs { id status } }',
        {},
        (v) => ids.every((id) => v.some((x) => x.jobs.id === id && x.jobs.status === 'CANCELED')),
      );
      const ones = ids.map((id) =>
        collect<{ jobUpdated: { status: string } }>(
          client,
          'subscription ($id: ID!) { jobUpdated(id: $id) { status } }',
          { id },
        ),
      );
      const allStream = readEvents(`${app.url}/api/v1/jobs/events`, alice, {
        stop: (events) =>
          ids.every((id) => events.some((e) => e.data.job_id === id && e.data.status === 'canceled')),
      });
      const oneStreams = ids.map((id) => readEvents(`${app.url}/api/v1/jobs/${id}/events`, alice));
      // Every consumer listens: 4 subscriptions, 4 streams and the waiting request.
      while (app.runtime.services.events.listenerCount() < listeners + 9)
        await new Promise((r) => setTimeout(r, 20));

      // Each job ends while the service's listening connection is gone and cannot come back (on a
      // connection of another process, opened before, as another worker would end it); then the
      // listening connection is cut once more right after it came back.
      other = await openOrm({ clientUrl: app.databaseUrl, entities });
      await other.em.fork().execute('select 1');
      const jobs = new JobService(new JobStore(other, jobStatementParts(null)), new JobQueries(other));
      const listening = async () => {
        while (Number((await admin.query(`select count(*) ${listener}`, [database])).rows[0].count) < 1)
          await new Promise((r) => setTimeout(r, 20));
      };
      for (const id of ids) {
        await admin.query(`alter database ${database} allow_connections false`);
        await admin.query(`select pg_terminate_backend(pid) ${listener}`, [database]);
        expect(await jobs.transition(id, 'canceled')).not.toBeNull();
        await admin.query(`alter database ${database} allow_connections true`);
        await listening();
        await admin.query(`select pg_terminate_backend(pid) ${listener}`, [database]);
        await listening();
      }

      const seen = await within(all.done, 60_000, 'the ended jobs on `jobs`');
      for (const id of ids)
        expect(
          seen
            .filter((v) => v.jobs.id === id)
            .map((v) => v.jobs.status)
            .at(-1),
        ).toBe('CANCELED');
      for (const one of ones)
        expect(
          (await within(one.done, 60_000, 'the end on `jobUpdated`')).map((v) => v.jobUpdated.status).at(-1),
        ).toBe('CANCELED');
      const listed = await within(allStream, 60_000, 'the ended jobs on /api/v1/jobs/events');
      expect(new Set(listed.events.map((e) => e.id)).size).toBe(listed.events.length);
      // A single job's stream ends by itself, its job's end last.
      for (const [i, stream] of oneStreams.entries()) {
        const { events } = await within(stream, 60_000, `the end of /api/v1/jobs/${ids[i]}/events`);
        expect(events.at(-1)).toMatchObject({
          event: 'transition',
          data: { job_id: ids[i], status: 'canceled' },
        });
      }
      const res = await within(waiting, 60_000, 'the answer of the waiting request');
      expect(res.status).toBe(201);
      expect(res.body.job).toMatchObject({ id: ids[2], status: 'canceled' });
      expect(
        await until(
          async () => pids.filter(alive),
          (left) => left.length === 0,
          60_000,
        ),
      ).toEqual([]);
      const messages = await receiver.until((r) => r.filter((m) => m.path === '/gap').length >= ids.length);
      expect(
        messages
          .filter((m) => m.path === '/gap')
          .map((m) => JSON.parse(m.body) as { id: string; status: string })
          .map((j) => `${j.id}:${j.status}`)
          .sort(),
      ).toEqual(ids.map((id) => `${id}:canceled`).sort());
    } finally {
      await admin.query(`alter database ${database} allow_connections true`);
      await admin.end();
      await client.dispose();
      await other?.close(true);
      await app.close();
      await receiver.close();
    }
  });
});
