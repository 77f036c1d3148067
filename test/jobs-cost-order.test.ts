import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Migration20261127110000_job_cost_order } from '../migrations/Migration20261127110000_job_cost_order';
import { startTestApp, type TestApp } from './helpers/app';

/**
 * Issue 31: the jobs list sorted by cost (docs/governance.md, "Sorting by cost"). Cost is machine
 * time x the machine type's price, so the order must merge machine types of different prices.
 */
const PRICES = `
currency: USD
per_machine_second:
  gpu: "0.5"
  cpu: "0.0001"
  free: "0"
  default: "0.001"
storage_per_gb_month: "0.02"
`;
/** Prices as SQL, for the reference order: a plain sort of all the owner's ended jobs. */
const PRICE_SQL = `case machine_type when 'gpu' then 0.5 when 'cpu' then 0.0001 when 'free' then 0 else 0.001 end`;

let t: TestApp;
let seq = 0;

beforeAll(async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cost-order-'));
  await writeFile(path.join(dir, 'prices.yaml'), PRICES);
  t = await startTestApp({ PRICES_FILE: path.join(dir, 'prices.yaml') });
});
afterAll(async () => {
  await t.close();
});

const exec = (q: string, values: unknown[] = []) => t.runtime.orm.em.fork().execute(q, values);

async function person(name: string) {
  const token = `Bearer ${await t.tokenFor(`${name}-${++seq}`)}`;
  const me = await t.gql('{ me { id } }', {}, token);
  return { token, id: me.body.data.me.id as string };
}

/**
 * An owner's jobs as rows: `ended` with the machine time given (types of different prices, ties
 * within and across types, jobs that never ran), and some not ended (starting or running, which
 * no dispatch claims).
 */
async function jobsOf(owner: string, ended: [type: string, micros: number][], unended = 3): Promise<void> {
  const [{ id: deployment }] = await exec(
    `insert into deployments (id, owner_type, owner_id, name, model_id, args, target_asset_id, created_at)
     values (gen_random_uuid(), 'user', ?, 'd', gen_random_uuid(), '{}', gen_random_uuid(), now()) returning id`,
    [owner],
  );
  await exec(
    `insert into jobs (id, deployment_id, model_id, owner_type, owner_id, status, executor, argv, container,
                       machine_type, machine_count, timeout_seconds, created_at, started_at, finished_at, run_seconds,
                       machine_micros, updated_at)
     select gen_random_uuid(), ?, gen_random_uuid(), 'user', ?, 'succeeded', 'local', '[]', 'c', e.t, 1, 60,
            now() - interval '1 day', case when e.m > 0 then now() - interval '1 day' end,
            now() - interval '1 day' + e.m * interval '1 microsecond', case when e.m > 0 then e.m / 1e6 end, e.m, now()
     from unnest(?::text[], ?::bigint[]) as e(t, m)`,
    [deployment, owner, `{${ended.map((e) => e[0]).join(',')}}`, `{${ended.map((e) => e[1]).join(',')}}`],
  );
  await exec(
    `insert into jobs (id, deployment_id, model_id, owner_type, owner_id, status, executor, argv, container,
                       machine_type, machine_count, timeout_seconds, created_at, started_at, updated_at)
     select gen_random_uuid(), ?, gen_random_uuid(), 'user', ?, case when i % 2 = 0 then 'starting' else 'running' end,
            'local', '[]', 'c', 'gpu', 2, 60, now(), case when i % 2 = 1 then now() - interval '1 hour' end, now()
     from generate_series(1, ?) i`,
    [deployment, owner, unended],
  );
}

async function reference(owner: string, direction: 'desc' | 'asc'): Promise<string[]> {
  const rows = await exec(
    `select id from jobs where owner_id = ? and machine_micros is not null
     order by machine_micros * ${PRICE_SQL} ${direction}, machine_micros ${direction}, id ${direction}`,
    [owner],
  );
  return rows.map((r) => r.id as string);
}

/** Every page of a REST list, following its `Link`. */
async function allPages(token: string, first: string): Promise<{ id: string; cost: { amount: string } }[]> {
  const out: { id: string; cost: { amount: string } }[] = [];
  let next: string | undefined = first;
  while (next) {
    const res: { body: typeof out; headers: Record<string, string> } = await t
      .http()
      .get(next)
      .set('authorization', token)
      .expect(200);
    out.push(...res.body);
    if (out.length > 1000) throw new Error(`more pages than jobs: ${first} repeats itself`);
    next = /<([^>]+)>; rel="next"/.exec(res.headers.link ?? '')?.[1];
  }
  return out;
}

/**
 * 140 ended jobs over 4 types, costs in micro-dollars: ties within a type, across types (2 gpu
 * microseconds cost what 10,000 cpu and 1,000 tpu ones do) and at 0 (never ran, or free).
 */
function mixture(): [string, number][] {
  const out: [string, number][] = [];
  for (let i = 0; i < 35; i++) {
    out.push(['gpu', (i % 12) * 2]); // 0 .. 22 us x 0.5: costs 0 .. 11, each twice or thrice
    out.push(['cpu', (i % 15) * 10_000]); // costs 0 .. 14 (ties with gpu's)
    out.push(['tpu', (i % 9) * 1_000 + (i % 2)]); // priced at default: costs 0 .. 8.001
    out.push(['free', i % 4]); // cost 0 whatever the time
  }
  return out;
}

describe('GET /api/v1/jobs?sort=cost', () => {
  let alice: { token: string; id: string };
  let bob: { token: string; id: string };

  beforeAll(async () => {
    alice = await person('alice');
    bob = await person('bob');
    await jobsOf(alice.id, mixture());
    // Bob's jobs cost more than any of Alice's: the first to show if tenancy leaked.
    await jobsOf(bob.id, [
      ['gpu', 1_000_000],
      ['cpu', 9_000_000],
      ['tpu', 0],
    ]);
  });

  it.each([
    ['cost', 'desc'],
    ['cost_asc', 'asc'],
  ] as const)(
    'sort=%s pages through every ended job once, in cost order across machine types, only the owner’s',
    async (sort, direction) => {
      const expected = await reference(alice.id, direction);
      expect(expected).toHaveLength(140);
      for (const limit of [7, 50]) {
        const got = await allPages(alice.token, `/api/v1/jobs?sort=${sort}&limit=${limit}`);
        expect(got.map((j) => j.id)).toEqual(expected);
        const amounts = got.map((j) => Number(j.cost.amount));
        const ordered = [...amounts].sort((a, b) => (direction === 'desc' ? b - a : a - b));
        expect(amounts).toEqual(ordered);
      }
      // Bob sees his own 3 ended jobs only, most expensive first: gpu 0.5 x 1 s, cpu 0.0001 x 9 s, then 0.
      const bobs = await allPages(bob.token, `/api/v1/jobs?sort=${sort}&limit=2`);
      expect(bobs.map((j) => j.cost.amount)).toEqual(
        direction === 'desc' ? ['0.5000', '0.0009', '0.0000'] : ['0.0000', '0.0009', '0.5000'],
      );
    },
  );

  it('GraphQL jobs(orderBy: COST) answers the same order, and each edge cursor goes on after its job', async () => {
    const expected = await reference(alice.id, 'desc');
    const q = `query ($after: String) { jobs(orderBy: COST, first: 20, after: $after) {
      edges { cursor node { id status cost { amount final } } } pageInfo { hasNextPage endCursor } } }`;
    const first = await t.gql(q, { after: null }, alice.token);
    expect(first.body.errors).toBeUndefined();
    const edges = first.body.data.jobs.edges as { cursor: string; node: { id: string } }[];
    expect(edges.map((e) => e.node.id)).toEqual(expected.slice(0, 20));
    expect(first.body.data.jobs.pageInfo).toEqual({ hasNextPage: true, endCursor: edges[19].cursor });
    const fromFifth = await t.gql(q, { after: edges[4].cursor }, alice.token);
    expect(fromFifth.body.data.jobs.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual(
      expected.slice(5, 25),
    );
    const asc = await t.gql('{ jobs(orderBy: COST_ASC, first: 3) { nodes { id } } }', {}, alice.token);
    expect(asc.body.data.jobs.nodes.map((n: { id: string }) => n.id)).toEqual(
      (await reference(alice.id, 'asc')).slice(0, 3),
    );
  });

  it('jobs not ended are left out of the cost order, and are in the default one', async () => {
    const byCost = await allPages(alice.token, '/api/v1/jobs?sort=cost&limit=200');
    const all = await allPages(alice.token, '/api/v1/jobs?limit=200');
    expect(all).toHaveLength(143);
    expect(byCost).toHaveLength(140);
    expect(byCost.every((j) => (j as unknown as { status: string }).status === 'succeeded')).toBe(true);
  });

  it('a job ended by the ending statement (cancel) enters the cost order with its machine time, as the backfill computes it', async () => {
    const carol = await person('carol');
    await jobsOf(carol.id, [['cpu', 5]], 2);
    const [running] = await exec(`select id from jobs where owner_id = ? and status = 'running'`, [carol.id]);
    expect((await allPages(carol.token, '/api/v1/jobs?sort=cost')).map((j) => j.id)).not.toContain(
      running.id,
    );
    await t.http().post(`/api/v1/jobs/${running.id}/cancel`).set('authorization', carol.token).expect(200);
    const [row] = await exec(
      `select machine_micros::text as micros,
              (machine_count * extract(epoch from finished_at - started_at) * 1000000)::bigint::text as expected
       from jobs where id = ?`,
      [running.id],
    );
    // 2 machines x about an hour, to the microsecond.
    expect(row.micros).toBe(row.expected);
    expect(Number(row.micros)).toBeGreaterThan(2 * 3600e6);
    const [top] = await allPages(carol.token, '/api/v1/jobs?sort=cost&limit=1');
    expect(top).toMatchObject({ id: running.id, status: 'canceled', cost: { final: true } });
    // A job canceled while starting never ran: machine time 0, last by cost.
    const [queued] = await exec(`select id from jobs where owner_id = ? and status = 'starting'`, [carol.id]);
    await t.http().post(`/api/v1/jobs/${queued.id}/cancel`).set('authorization', carol.token).expect(200);
    const [zero] = await exec(`select machine_micros::text as micros from jobs where id = ?`, [queued.id]);
    expect(zero.micros).toBe('0');
    const ids = (await allPages(carol.token, '/api/v1/jobs?sort=cost')).map((j) => j.id);
    expect(ids).toHaveLength(3);
    expect(ids[0]).toBe(running.id);

    // The migration's backfill gives jobs that ended before it what the ending statement gave.
    const orm = t.runtime.orm;
    const migration = new Migration20261127110000_job_cost_order(orm.em.getDriver(), orm.config);
    await migration.up();
    const backfill = migration.getQueries().find((q) => /^update "jobs"/.test(String(q)));
    const micros = async () =>
      exec(`select id, machine_micros::text as m from jobs where owner_id = ? order by id`, [carol.id]);
    const set = await micros();
    await exec(`update jobs set machine_micros = null where owner_id = ?`, [carol.id]);
    await exec(`${String(backfill).replace(/;$/, '')} and owner_id = ?`, [carol.id]);
    expect(await micros()).toEqual(set);
    expect(set.filter((r) => r.m === null)).toHaveLength(0);
  });

  it.each([
    ['sort=price', 'sort'],
    ['sort=COST', 'sort'],
    ['sort=cost&status=failed', 'orderBy'],
    [`sort=cost&model_id=${'0'.repeat(8)}-0000-4000-8000-000000000000`, 'orderBy'],
    ['sort=cost&cursor=bm90LWEtY3Vyc29y', 'cursor'],
  ])('?%s is 400 VALIDATION_FAILED naming %s', async (query, field) => {
    const res = await t.http().get(`/api/v1/jobs?${query}`).set('authorization', alice.token);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(JSON.stringify(res.body.error)).toContain(field);
  });

  it('a cursor of the default order is refused by the cost order, and the other way round', async () => {
    const plain = await t.http().get('/api/v1/jobs?limit=1').set('authorization', alice.token).expect(200);
    const plainCursor = new URL(/<([^>]+)>/.exec(plain.headers.link)![1], t.url).searchParams.get('cursor');
    const byCost = await t
      .http()
      .get('/api/v1/jobs?sort=cost&limit=1')
      .set('authorization', alice.token)
      .expect(200);
    const costCursor = new URL(/<([^>]+)>/.exec(byCost.headers.link)![1], t.url).searchParams.get('cursor');
    for (const q of [`sort=cost&cursor=${plainCursor}`, `cursor=${costCursor}`]) {
      const res = await t.http().get(`/api/v1/jobs?${q}`).set('authorization', alice.token);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'VALIDATION_FAILED' });
    }
    // GraphQL: an unknown order is refused by validation, a filter with a cost order by the service.
    const bad = await t.gql('{ jobs(orderBy: PRICE) { nodes { id } } }', {}, alice.token);
    expect(bad.body.errors[0].message).toMatch(/PRICE/);
    const filtered = await t.gql(
      '{ jobs(orderBy: COST, filter: { status: FAILED }) { nodes { id } } }',
      {},
      alice.token,
    );
    expect(filtered.body.errors[0].extensions.code).toBe('VALIDATION_FAILED');
  });

  it('the OpenAPI document describes sort', async () => {
    const doc = (await t.http().get('/api/openapi.json').expect(200)).body;
    const params = doc.paths['/api/v1/jobs'].get.parameters as {
      name: string;
      schema: { enum?: string[] };
    }[];
    expect(params.find((p) => p.name === 'sort')?.schema.enum).toEqual(['created_at', 'cost', 'cost_asc']);
  });
});
