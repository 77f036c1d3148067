/**
 * `npm run bench -- billing`: a month's usage of an owner with 1,000,000 job rows (a year of
 * them) and 100,000 stored files, over REST and GraphQL (daily series and per-model breakdown),
 * against baselines measured in the same run on the same rows: a bare `count(*)` of the
 * month's jobs and the month's machine-seconds summed in one plain SQL statement.
 */
import { Client } from 'pg';
import { spendPart } from '../src/billing/billing.spend';
import { DEFAULT_PRICES } from '../src/common/price-list';
import { readsOf, sql, withCtes } from '../src/db/sql';
import { median, percentile, printTable, setting, startService, type ServiceUnderTest } from './lib';

const JOBS = setting('BENCH_JOBS', 1_000_000, 2_000);
const FILES = setting('BENCH_FILES', 100_000, 200);
const RUNS = setting('BENCH_RUNS', 15, 2);
const DEPLOYMENTS = setting('BENCH_BUDGET_DEPLOYMENTS', 400, 20);
const MONTH = {
  from: '2025-06-01',
  to: '2025-06-30',
  start: '2025-06-01T00:00:00Z',
  end: '2025-07-01T00:00:00Z',
};

async function timed(runs: number, fn: () => Promise<unknown>): Promise<number> {
  await fn(); // warm-up: plans, caches
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return median(times);
}

/** A year of jobs: 1-60 minutes each (1 in 100 runs 1-3 days), 1-4 machines, 3 machine types, 20 models. */
async function seed(db: Client, ownerId: string): Promise<void> {
  await db.query(
    `insert into deployments (id, owner_type, owner_id, name, model_id, args, target_asset_id, created_at)
     values ('00000000-0000-4000-8000-000000000001', 'user', $1, 'bench', gen_random_uuid(), '{}', gen_random_uuid(), now())`,
    [ownerId],
  );
  await db.query(
    `insert into jobs (id, deployment_id, model_id, owner_type, owner_id, status, executor, argv, container,
       machine_type, machine_count, timeout_seconds, created_at, started_at, finished_at, run_seconds, updated_at)
     select gen_random_uuid(), '00000000-0000-4000-8000-000000000001', md5((i % 20)::text)::uuid, 'user', $1,
       case when i % 50 = 0 then 'failed' when i % 70 = 0 then 'canceled' else 'succeeded' end, 'local', '[]', 'c',
       (array['cpu', 'gpu', 'a100'])[i % 3 + 1], i % 4 + 1, 3600, s, s, s + d, extract(epoch from d), now()
     from (select i, timestamptz '2025-01-01' + (i::float8 / $2) * interval '365 days' as s,
             case when i % 100 = 0 then (1 + i % 3) * interval '1 day' else (1 + i % 60) * interval '1 minute' end as d
           from generate_series(1, $2::int) i) g`,
    [ownerId, JOBS],
  );
  // Files of 1-100 MB kept from some day of the year, one in four deleted 10 days later.
  await db.query(
    `insert into media_storage (asset_id, owner_type, owner_id, bytes, live_from, live_until)
     select gen_random_uuid(), 'user', $1, (1 + i % 100) * 1000000, f, case when i % 4 = 0 then f + interval '10 days' end
     from (select i, timestamptz '2025-01-01' + (i::float8 / $2) * interval '365 days' as f
           from generate_series(1, $2::int) i) g`,
    [ownerId, FILES],
  );
  // Ended, so in the spend rollup: added by the part the statement that ends a job composes, at once.
  const part = spendPart(DEFAULT_PRICES, { mail: false })({ jobs: 'upd' });
  const rollup = withCtes(
    [{ name: 'upd', sql: sql`select * from jobs where owner_id = ${ownerId}` }, ...part.ctes],
    sql`select 1${readsOf([part])}`,
  ).compile();
  let n = 0;
  await db.query(
    rollup.text.replace(/\?/g, () => `$${++n}`),
    rollup.params,
  );
  await db.query('vacuum analyze jobs');
  await db.query('vacuum analyze media_storage');
  await db.query('vacuum analyze spend_daily');
}

/**
 * Deployment creation without a budget and with a blocking one (a spend rollup and the owner's
 * unfinished jobs read before each), interleaved one by one in the same run: p50 and p99.
 */
async function budgetOverhead(sut: ServiceUnderTest): Promise<void> {
  const users = await Promise.all(
    ['nobudget', 'budgeted'].map(async (sub) => `Bearer ${await sut.token(sub)}`),
  );
  const call = async (auth: string, method: string, url: string, body: unknown) => {
    const res = await fetch(`${sut.service.url}${url}`, {
      method,
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
    return (await res.json()) as { id: string; data?: { createDeployment: { id: string } } };
  };
  const models = await Promise.all(
    users.map((auth) =>
      call(auth, 'POST', '/api/v1/models', {
        name: 'trivial',
        container: 'local',
        command: 'true {args}',
        args: {},
      }),
    ),
  );
  await call(users[1], 'PUT', '/api/v1/billing/budget', { monthly_limit: '1000000000.00', action: 'block' });
  const times: number[][] = [[], []];
  const query = 'mutation ($m: ID!) { createDeployment(input: { name: "b", modelId: $m, args: {} }) { id } }';
  for (let i = 0; i < DEPLOYMENTS + 20; i++)
    for (const k of [0, 1]) {
      const started = process.hrtime.bigint();
      await call(users[k], 'POST', '/graphql', { query, variables: { m: models[k].id } });
      if (i >= 20) times[k].push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  const [none, budget] = times;
  printTable(`Deployment creation over GraphQL, ${DEPLOYMENTS} each, interleaved (queued jobs pile up)`, [
    {
      what: 'without a budget',
      'p50 ms': percentile(none, 50).toFixed(2),
      'p99 ms': percentile(none, 99).toFixed(2),
    },
    {
      what: 'with a blocking budget',
      'p50 ms': percentile(budget, 50).toFixed(2),
      'p99 ms': percentile(budget, 99).toFixed(2),
    },
    {
      what: 'budget over none (bound: 1 ms at p50)',
      'p50 ms': (percentile(budget, 50) - percentile(none, 50)).toFixed(2),
      'p99 ms': (percentile(budget, 99) - percentile(none, 99)).toFixed(2),
    },
  ]);
}

export async function run(): Promise<void> {
  const sut = await startService({ LOCAL_EXECUTOR_TRUST: 'any' });
  const db = new Client({ connectionString: sut.db.url });
  await db.connect();
  try {
    const auth = { authorization: `Bearer ${await sut.token('finance')}` };
    const get = async (url: string, init: RequestInit = {}) => {
      const res = await fetch(`${sut.service.url}${url}`, { ...init, headers: { ...auth, ...init.headers } });
      if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
      return res.json();
    };
    await get('/api/v1/billing/usage'); // creates the user
    const { rows } = await db.query<{ id: string }>(`select id from users where subject = 'finance'`);
    const ownerId = rows[0].id;
    const seeding = Date.now();
    await seed(db, ownerId);
    console.log(`seeded ${JOBS} jobs and ${FILES} files in ${((Date.now() - seeding) / 1000).toFixed(0)} s`);

    const inMonth = `owner_type = 'user' and owner_id = $1 and started_at >= $2 and started_at < $3`;
    const count = await db.query(`select count(*)::int as n from jobs where ${inMonth}`, [
      ownerId,
      MONTH.start,
      MONTH.end,
    ]);
    const countMs = await timed(RUNS, async () => {
      await db.query(`select count(*) from jobs where ${inMonth}`, [ownerId, MONTH.start, MONTH.end]);
    });
    const rawMs = await timed(RUNS, async () => {
      await db.query(
        `select machine_type, count(*), sum(machine_count * extract(epoch from least(finished_at, $3) - started_at))
         from jobs where ${inMonth} group by machine_type`,
        [ownerId, MONTH.start, MONTH.end],
      );
    });
    const restUrl = `/api/v1/billing/usage?from=${MONTH.from}&to=${MONTH.to}`;
    const restMs = await timed(RUNS, () => get(restUrl));
    const query = `{ usage(from: "${MONTH.from}", to: "${MONTH.to}", granularity: DAY) {
      total items { machineType seconds amount } storage { byteSeconds amount }
      series { start computeAmount storageAmount total } models { modelId name amount } } }`;
    const graphMs = await timed(RUNS, () =>
      get('/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query }),
      }),
    );
    const yearMs = await timed(3, () => get('/api/v1/billing/usage?from=2025-01-01&to=2025-12-31'));
    console.log(
      `a year of ${JOBS} jobs from the spend rollup: ${yearMs.toFixed(1)} ms (median of 3; bound 1000 ms)`,
    );

    const row = (what: string, ms: number) => ({
      what,
      'median ms': ms.toFixed(1),
      ratio: (ms / countMs).toFixed(1),
    });
    printTable(`A month of ${count.rows[0].n} jobs (of ${JOBS}) and ${FILES} files, median of ${RUNS}`, [
      row('baseline: select count(*) of the month (index only)', countMs),
      row('baseline: machine-seconds per machine type, plain SQL', rawMs),
      row('GET /api/v1/billing/usage (a month)', restMs),
      row('GraphQL usage + daily series + models (a month)', graphMs),
      row(`GET /api/v1/billing/usage (the year, all ${JOBS} jobs; median of 3)`, yearMs),
    ]);
    await budgetOverhead(sut);
  } finally {
    await db.end();
    await sut.stop();
  }
}
