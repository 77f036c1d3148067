import { NEVER_STARTED } from '../src/executors/local.executor';
import { startTestApp, type TestApp } from './helpers/app';
import { createTestDatabase } from './helpers/db';
import { deploy } from './helpers/jobs';
import { until } from './helpers/media';

/**
 * Issue 30: a batch's chunk on the local executor, run by its worker (JobRunner.runChunk):
 * claimed a set at a time with a lookahead, its moves written in sets (docs/batches.md,
 * "Executors").
 */
jest.setTimeout(120_000);

let t: TestApp;
let n = 0;

beforeAll(async () => {
  t = await startTestApp({
    LOCAL_EXECUTOR_TRUST: 'any',
    LOCAL_EXECUTOR_CONCURRENCY: '2',
    BATCH_MAX_ITEMS: '1000',
    MAX_QUEUED_JOBS: '2000',
  });
});
afterAll(() => t.close());

async function person(): Promise<{ auth: string; id: string; model: string }> {
  const auth = `Bearer ${await t.tokenFor(`local-${++n}`)}`;
  const me = await t.gql('{ me { id } }', {}, auth);
  const res = await t
    .http()
    .post('/api/v1/models')
    .set('authorization', auth)
    .send({ name: 'trivial', container: 'local', command: 'true {args}', args: {} });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  return { auth, id: me.body.data.me.id, model: res.body.id };
}

async function batch(who: { auth: string; model: string }, items: number): Promise<string> {
  const res = await t
    .http()
    .post('/api/v1/batches')
    .set('authorization', who.auth)
    .send({
      name: 'many',
      model_id: who.model,
      inputs: { items: Array.from({ length: items }, () => ({})) },
    });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}

const sql = <T = Record<string, unknown>>(text: string, params: unknown[] = []): Promise<T[]> =>
  t.runtime.orm.em.fork().execute(text, params);

const completed = (auth: string, id: string) =>
  until(
    async () => (await t.http().get(`/api/v1/batches/${id}`).set('authorization', auth)).body,
    (b) => b.status === 'completed',
    90_000,
  );

describe('a chunk of short items on the local executor', () => {
  it('runs each job once through every state in order, claimed ahead and moved in sets; the owner’s counters end where they began and every run is in the spend', async () => {
    const who = await person();
    const ITEMS = 400;
    const id = await batch(who, ITEMS);
    const done = await completed(who.auth, id);
    expect(done.counts.succeeded).toBe(ITEMS);
    const paths = await sql<{ path: string; jobs: number }>(
      `select path, count(*)::int as jobs from (
         select job_id, string_agg(to_status, ' ' order by id) as path from job_transitions
         where job_id in (select id from jobs where batch_id = ?) group by job_id) p group by path`,
      [id],
    );
    expect(paths).toEqual([{ path: 'queued starting running succeeded', jobs: ITEMS }]);
    // Claimed ahead of the two slots (more than two in one statement), and moved in sets.
    const largest = await sql<{ to_status: string; n: number }>(
      `select to_status, max(n)::int as n from (
         select to_status, at, count(*) as n from job_transitions
         where job_id in (select id from jobs where batch_id = ?) group by to_status, at) s
       group by to_status order by to_status`,
      [id],
    );
    const of = Object.fromEntries(largest.map((r) => [r.to_status, r.n]));
    expect(of.starting).toBeGreaterThan(2);
    expect(of.running).toBeGreaterThan(1);
    expect(of.succeeded).toBeGreaterThan(1);
    // Each set's end left the counters: none still counts as running (an UPDATE ... FROM of
    // several rows of one owner would have taken one of them off).
    const [usage] = await sql<{
      running_jobs: number;
      running_machines: Record<string, number>;
      usage: number;
    }>(
      `select running_jobs, running_machines, usage from owner_usage where owner_type = 'user' and owner_id = ?`,
      [who.id],
    );
    expect(usage.running_jobs).toBe(0);
    expect(Object.values(usage.running_machines).every((m) => m === 0)).toBe(true);
    expect(usage.usage).toBeGreaterThan(0);
    const [spend] = await sql<{ jobs: number }>(
      `select coalesce(sum(jobs), 0)::int as jobs from spend_daily where owner_id = ? and model_id = ?`,
      [who.id, who.model],
    );
    expect(spend.jobs).toBe(ITEMS);
  });

  it('lets an interactive job created meanwhile take the next slot, not the batch’s remaining items', async () => {
    const who = await person();
    const id = await batch(who, 800);
    await until(
      () =>
        sql<{ n: number }>(
          `select count(*)::int as n from jobs where batch_id = ? and status = 'succeeded'`,
          [id],
        ),
      ([r]) => r.n >= 50,
      60_000,
    );
    const single = await deploy(t, who.auth, who.model, {});
    await completed(who.auth, id);
    const [row] = await sql<{ created: number; claimed_between: number; claimed_after: number }>(
      `select (select count(*)::int from jobs b where b.batch_id = ? and b.claimed_at > s.created_at
                and b.claimed_at < s.claimed_at) as claimed_between,
              (select count(*)::int from jobs b where b.batch_id = ? and b.claimed_at > s.claimed_at) as claimed_after
       from jobs s where s.id = ?`,
      [id, id, single.jobId],
    );
    // It waited for the jobs claimed ahead at most (MAX_LOOKAHEAD), not for the batch to end.
    expect(row.claimed_between).toBeLessThanOrEqual(130);
    expect(row.claimed_after).toBeGreaterThan(0);
  });

  it('holds to the owner’s quota: a chunk whose set does not fit runs its jobs as single ones', async () => {
    const who = await person();
    await sql(
      `insert into owner_quotas (owner_type, owner_id, max_running_jobs, machines, shares, updated_at)
       values ('user', ?, 1, '{}', 1, now())`,
      [who.id],
    );
    const id = await batch(who, 30);
    let most = 0;
    const watch = (async () => {
      for (;;) {
        const [r] = await sql<{ n: number; done: boolean }>(
          `select count(*) filter (where status in ('starting', 'running'))::int as n,
                  bool_and(status = 'succeeded') as done from jobs where batch_id = ?`,
          [id],
        );
        most = Math.max(most, r.n);
        if (r.done) return;
      }
    })();
    await completed(who.auth, id);
    await watch;
    expect(most).toBe(1);
  });
});

describe('a worker that stops in the middle of a chunk', () => {
  it('fails the jobs it claimed ahead as never run, queues each again as the same attempt, and another worker runs them', async () => {
    const env = {
      LOCAL_EXECUTOR_TRUST: 'any',
      LOCAL_EXECUTOR_CONCURRENCY: '2',
      BATCH_MAX_ITEMS: '1000',
      MAX_QUEUED_JOBS: '2000',
    };
    const databaseUrl = await createTestDatabase();
    const first = await startTestApp(env, { databaseUrl, issuer: t.issuer });
    let second: TestApp | null = null;
    let firstClosed = false;
    const auth = `Bearer ${await t.tokenFor('local-stop')}`;
    const on = (app: TestApp) => ({
      sql: <T>(text: string, params: unknown[] = []): Promise<T[]> =>
        app.runtime.orm.em.fork().execute(text, params),
    });
    try {
      const model = await first
        .http()
        .post('/api/v1/models')
        .set('authorization', auth)
        .send({ name: 'short', container: 'local', command: 'sleep 0.02 {args}', args: {}, max_retries: 0 });
      expect(model.status).toBe(201);
      const ITEMS = 300;
      const created = await first
        .http()
        .post('/api/v1/batches')
        .set('authorization', auth)
        .send({
          name: 'stopped',
          model_id: model.body.id,
          inputs: { items: Array.from({ length: ITEMS }, () => ({})) },
        });
      expect(created.status).toBe(201);
      const batchId = created.body.id as string;
      // Well into the chunk (its pace known, so claimed ahead), the worker stops.
      await until(
        () =>
          on(first).sql<{ n: number }>(
            `select count(*)::int as n from jobs where batch_id = ? and status = 'succeeded'`,
            [batchId],
          ),
        ([r]) => r.n >= 60,
        60_000,
      );
      await first.close();
      firstClosed = true;
      second = await startTestApp(env, { databaseUrl, issuer: t.issuer });
      const { sql } = on(second);
      await until(
        () =>
          second!
            .http()
            .get(`/api/v1/batches/${batchId}`)
            .set('authorization', auth)
            .then((r) => r.body),
        (b) => b.status === 'completed',
        90_000,
      );
      type Row = {
        id: string;
        status: string;
        error: string | null;
        attempt: number;
        retry_of: string | null;
        batch_item: number;
      };
      const jobs = await sql<Row>(
        `select id, status, error, attempt, retry_of, batch_item from jobs where batch_id = ?`,
        [batchId],
      );
      const neverRan = jobs.filter((j) => j.error === NEVER_STARTED);
      // Claimed ahead and waiting for a slot when the worker stopped: some, and not one of them ran.
      expect(neverRan.length).toBeGreaterThan(0);
      const [ran] = await sql<{ n: number }>(
        `select count(*)::int as n from job_transitions x join jobs j on j.id = x.job_id
         where j.batch_id = ? and j.error = ? and x.to_status = 'running'`,
        [batchId, NEVER_STARTED],
      );
      expect(ran.n).toBe(0);
      // Each is queued again as the same attempt (max_retries 0 notwithstanding), and that one ends.
      for (const j of neverRan) {
        const again = jobs.filter((r) => r.retry_of === j.id);
        expect(again).toHaveLength(1);
        expect(again[0]).toMatchObject({ attempt: j.attempt, batch_item: j.batch_item });
      }
      // Every item's latest job ended; those that failed for good had their process stopped by the
      // shutdown (as many as had a process then: the two slots, and under load some that had just
      // exited, their exit not read yet).
      const latest = jobs.filter((j) => !jobs.some((r) => r.retry_of === j.id));
      expect(new Set(latest.map((j) => j.batch_item)).size).toBe(ITEMS);
      expect(latest).toHaveLength(ITEMS);
      for (const j of latest.filter((r) => r.status !== 'succeeded'))
        expect(j).toMatchObject({
          status: 'failed',
          error: expect.stringMatching(/shut down while the job ran/),
        });
    } finally {
      if (!firstClosed) await first.close();
      await second?.close();
    }
  });
});
