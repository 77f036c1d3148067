import { randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import type { Owner } from '../src/common/principal';
import { startTestApp, type TestApp } from './helpers/app';
import { pngBytes, uploadFile } from './helpers/media';
import { planOf } from './helpers/sql';
import { jobsWhere, rollUp, sql } from './helpers/spend';

/** Round prices, so that every amount below can be checked by hand. */
const PRICES = `
currency: EUR
per_machine_second:
  gpu: 0.001
  cpu: "0.0001"
  default: 0.0005
storage_per_gb_month: 0.10
`;
const THUMBNAIL = 'ae6f879c-3158-422d-8c51-cc68c7a2bb17'; // a built-in model
const GONE_MODEL = randomUUID(); // a model deleted since its jobs ran

let t: TestApp;
let pg: Client;
let alice: string;
let bob: string;
let carol: string;
let teamKey: string;
/** SQL statements of the running app, while a test records them. */
let recording: string[] | undefined;
const owners: Record<'alice' | 'bob' | 'carol' | 'team', Owner> = {} as never;

async function userOwner(auth: string): Promise<Owner> {
  const me = await t.gql('{ me { id } }', {}, auth);
  return { type: 'user', id: me.body.data.me.id };
}

interface JobFixture {
  owner: Owner;
  machineType: string;
  count?: number;
  status: 'running' | 'succeeded' | 'failed' | 'canceled';
  /** ISO times; a job that never ran has no start. */
  start: string | null;
  end?: string | null;
  modelId?: string;
}

/** A job row as the jobs module stores it (with its deployment), of a known duration. */
async function insertJob(j: JobFixture): Promise<void> {
  const deployment = randomUUID();
  const modelId = j.modelId ?? THUMBNAIL;
  await pg.query(
    `insert into deployments (id, owner_type, owner_id, name, model_id, args, target_asset_id, created_at)
     values ($1, $2, $3, 'fixture', $4, '{}', gen_random_uuid(), now())`,
    [deployment, j.owner.type, j.owner.id, modelId],
  );
  const id = randomUUID();
  await pg.query(
    `insert into jobs (id, deployment_id, model_id, owner_type, owner_id, status, executor, argv, container,
       machine_type, machine_count, timeout_seconds, created_at, started_at, finished_at, run_seconds, updated_at)
     values ($10, $1, $2, $3, $4, $5, 'local', '[]', 'builtin/media-demo', $6, $7, 3600,
       coalesce($8::timestamptz, $9::timestamptz, now()), $8, $9, extract(epoch from $9::timestamptz - $8::timestamptz), now())`,
    [
      deployment,
      modelId,
      j.owner.type,
      j.owner.id,
      j.status,
      j.machineType,
      j.count ?? 1,
      j.start,
      j.end ?? null,
      id,
    ],
  );
  // An ended job is in the spend rollup, as the statement that ends one puts it there.
  if (j.end) await rollUp(t.runtime.orm, t.config.prices, jobsWhere(sql`id = ${id}`));
}

/** A span of the storage ledger: `bytes` live from `from` until `until` (null: still live). */
async function insertStorage(owner: Owner, bytes: number, from: string, until: string | null): Promise<void> {
  await pg.query(
    `insert into media_storage (asset_id, owner_type, owner_id, bytes, live_from, live_until)
     values (gen_random_uuid(), $1, $2, $3, $4, $5)`,
    [owner.type, owner.id, bytes, from, until],
  );
}

function usage(auth: string, query = '') {
  const req = t.http().get(`/api/v1/billing/usage${query}`);
  return auth.startsWith('Bearer ') ? req.set('authorization', auth) : req.set('x-service-key', auth);
}

const USAGE_QUERY = `query($from: String, $to: String, $granularity: UsageGranularity) {
  usage(from: $from, to: $to, granularity: $granularity) {
    owner { type id } period { start end } currency total
    items { machineType jobs seconds unitPrice amount }
    storage { byteSeconds gbMonths unitPrice amount }
    series { start end computeSeconds computeAmount storageByteSeconds storageAmount total }
    models { modelId name jobs seconds amount }
  }
}`;

async function graphUsage(auth: string, variables: Record<string, string>) {
  const res = await t.gql(USAGE_QUERY, variables, auth);
  expect(res.body.errors).toBeUndefined();
  return res.body.data.usage;
}

const in2025 = (time: string | null) => time && `2025-${time}Z`;

/** machine type, machines, status, start and end in 2025 (UTC), model: machine-seconds in October */
const ALICE_JOBS: [string, number, JobFixture['status'], string | null, string | null, string][] = [
  ['gpu', 2, 'succeeded', '10-10T10:00:00', '10-10T11:00:00', THUMBNAIL], // 2 x 3600
  ['cpu', 1, 'succeeded', '10-11T00:00:00', '10-11T00:20:50', THUMBNAIL], // 1250
  ['cpu', 1, 'canceled', '10-12T00:00:00', '10-12T00:10:00', GONE_MODEL], // 600: canceled while running
  ['cpu', 1, 'canceled', null, '10-12T01:00:00', GONE_MODEL], // never ran: free
  ['gpu', 1, 'failed', '10-13T00:00:00', '10-13T00:05:00', GONE_MODEL], // 300: failed while running
  ['gpu', 1, 'failed', null, '10-13T01:00:00', GONE_MODEL], // never ran: free
  ['gpu', 1, 'succeeded', '09-30T23:00:00', '10-01T01:00:00', THUMBNAIL], // 3600 of its 7200
  ['cpu', 4, 'succeeded', '10-31T23:30:00', '11-01T00:30:00', GONE_MODEL], // 4 x 1800 of its 4 x 3600
  ['tpu', 1, 'succeeded', '10-20T00:00:00', '10-20T00:16:40', GONE_MODEL], // 1000 at the default price
  ['gpu', 1, 'succeeded', '10-25T00:00:00', '10-28T00:00:00', THUMBNAIL], // 3 days
  ['gpu', 1, 'running', '10-31T22:00:00', null, THUMBNAIL], // still running: 7200
];

/** Sum of decimal strings with two decimals, in cents. */
const cents = (values: string[]) => values.reduce((a, v) => a + Math.round(Number(v) * 100), 0);

beforeAll(async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'billing-test-'));
  await writeFile(path.join(dir, 'prices.yaml'), PRICES);
  t = await startTestApp(
    { PRICES_FILE: path.join(dir, 'prices.yaml') },
    { onQuery: (sql) => recording?.push(sql) },
  );
  pg = new Client({ connectionString: t.databaseUrl });
  await pg.connect();
  alice = `Bearer ${await t.tokenFor('alice')}`;
  bob = `Bearer ${await t.tokenFor('bob')}`;
  carol = `Bearer ${await t.tokenFor('carol')}`;
  owners.alice = await userOwner(alice);
  owners.bob = await userOwner(bob);
  owners.carol = await userOwner(carol);
  const team = await t.http().post('/api/v1/teams').set('authorization', alice).send({ name: 'acme' });
  owners.team = { type: 'team', id: team.body.id };
  const key = await t
    .http()
    .post('/api/v1/tokens')
    .set('authorization', alice)
    .send({ name: 'acme-billing', team_id: team.body.id });
  teamKey = key.body.token;

  // Alice's October 2025 (gpu 0.001, cpu 0.0001, anything else 0.0005 per machine-second).
  for (const [machineType, count, status, start, end, modelId] of ALICE_JOBS)
    await insertJob({
      owner: owners.alice,
      machineType,
      count,
      status,
      start: in2025(start),
      end: in2025(end),
      modelId,
    });
  // 2 GB kept all month, 1 GB for half of it.
  await insertStorage(owners.alice, 2e9, '2025-09-01T00:00:00Z', null);
  await insertStorage(owners.alice, 1e9, '2025-10-01T00:00:00Z', '2025-10-16T12:00:00Z');

  // The team's, which Alice's user token must not see (nor the team Alice's).
  await insertJob({
    owner: owners.team,
    machineType: 'gpu',
    status: 'succeeded',
    start: '2025-10-05T00:00:00Z',
    end: '2025-10-05T00:10:00Z',
  });
  await insertStorage(owners.team, 1e9, '2025-09-01T00:00:00Z', '2025-12-01T00:00:00Z');
});

afterAll(async () => {
  await pg.end();
  await t.close();
});

const OCTOBER = '?from=2025-10-01&to=2025-10-31';

describe('GET /api/v1/billing/usage', () => {
  it("prices a month of the user's jobs and storage exactly", async () => {
    const res = await usage(alice, OCTOBER);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      owner: { type: 'user', id: owners.alice.id },
      period: { start: '2025-10-01T00:00:00.000Z', end: '2025-11-01T00:00:00.000Z' },
      currency: 'EUR',
      items: [
        // 1250 + 600 (canceled while running) + 4 x 1800 (until the month ends); 0.905 rounds half up
        { machine_type: 'cpu', jobs: 3, seconds: '9050', unit_price: '0.0001', amount: '0.91' },
        // 2 x 3600 + 300 (failed while running) + 3600 (from September) + 3 days + 7200 (running)
        { machine_type: 'gpu', jobs: 5, seconds: '277500', unit_price: '0.001', amount: '277.50' },
        // not in the price list: the default price
        { machine_type: 'tpu', jobs: 1, seconds: '1000', unit_price: '0.0005', amount: '0.50' },
      ],
      storage: {
        // 2 GB x 31 days + 1 GB x 15.5 days
        byte_seconds: String(2e9 * 31 * 86400 + 1e9 * 15.5 * 86400),
        gb_months: '2.547945', // 6.696e15 / (1e9 x 730 h)
        unit_price: '0.10',
        amount: '0.25',
      },
      total: '279.16',
    });
  });

  it('prorates jobs and storage over a partial period', async () => {
    const res = await usage(alice, '?from=2025-10-01T00:30:00Z&to=2025-10-10T12:30:00%2B02:00');
    expect(res.status).toBe(200);
    expect(res.body.period).toEqual({ start: '2025-10-01T00:30:00.000Z', end: '2025-10-10T10:30:00.000Z' });
    // the last half hour of the job from September, the first half hour of the 2-machine job
    expect(res.body.items).toEqual([
      { machine_type: 'gpu', jobs: 2, seconds: '5400', unit_price: '0.001', amount: '5.40' },
    ]);
    const seconds = 9 * 86400 + 10 * 3600;
    expect(res.body.storage).toEqual({
      byte_seconds: String(3e9 * seconds),
      gb_months: '0.928767',
      unit_price: '0.10',
      amount: '0.09',
    });
    expect(res.body.total).toBe('5.49');
  });

  it('bills a job that runs across the whole period for the period only', async () => {
    const res = await usage(alice, '?from=2025-10-26&to=2025-10-26');
    expect(res.body.items).toEqual([
      { machine_type: 'gpu', jobs: 1, seconds: '86400', unit_price: '0.001', amount: '86.40' },
    ]);
    expect(res.body.storage).toMatchObject({ byte_seconds: String(2e9 * 86400), amount: '0.01' });
  });

  it('bills a running job up to the end of the period, or up to now', async () => {
    // Alice's job running since 2025-10-31 22:00: its first 30 days.
    const november = await usage(alice, '?from=2025-11-01&to=2025-11-30');
    expect(november.body.items).toEqual([
      { machine_type: 'cpu', jobs: 1, seconds: '7200', unit_price: '0.0001', amount: '0.72' },
      { machine_type: 'gpu', jobs: 1, seconds: String(30 * 86400), unit_price: '0.001', amount: '2592.00' },
    ]);

    await insertJob({
      owner: owners.carol,
      machineType: 'gpu',
      status: 'running',
      start: new Date(Date.now() - 90_000).toISOString(),
    });
    const before = Date.now();
    const res = await usage(carol);
    const after = Date.now();
    const start = Math.max(Date.parse(res.body.period.start), before - 90_000);
    const seconds = Number(res.body.items[0].seconds);
    expect(seconds).toBeGreaterThanOrEqual((before - start) / 1000 - 1);
    expect(seconds).toBeLessThanOrEqual((after - start) / 1000 + 1);
  });

  it('defaults to the current calendar month in UTC', async () => {
    const now = new Date();
    const res = await usage(bob);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      owner: { type: 'user', id: owners.bob.id },
      period: {
        start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
        end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
      },
      currency: 'EUR',
      items: [],
      storage: { byte_seconds: '0', gb_months: '0.000000', unit_price: '0.10', amount: '0.00' },
      total: '0.00',
    });
  });

  it("separates a team's usage from its members'", async () => {
    const team = await usage(teamKey, OCTOBER);
    expect(team.status).toBe(200);
    expect(team.body.owner).toEqual({ type: 'team', id: owners.team.id });
    expect(team.body.items).toEqual([
      { machine_type: 'gpu', jobs: 1, seconds: '600', unit_price: '0.001', amount: '0.60' },
    ]);
    expect(team.body.storage).toMatchObject({ byte_seconds: String(1e9 * 31 * 86400), amount: '0.10' });
    expect(team.body.total).toBe('0.70');

    const others = await usage(bob, OCTOBER);
    expect(others.body).toMatchObject({ items: [], storage: { byte_seconds: '0' }, total: '0.00' });
  });

  it('answers 400 with the error body for bad periods', async () => {
    const cases: [string, Record<string, unknown>][] = [
      ['?from=2025-13-01&to=2025-12-01', { from: expect.stringMatching(/expected a date/) }],
      ['?from=2025-10-01&to=last%20week', { to: expect.stringMatching(/expected a date/) }],
      ['?from=2025-10-01T10:00:00&to=2025-10-02', { from: expect.stringMatching(/with a zone/) }],
      ['?from=2025-10-02&to=2025-10-01', { to: 'must be after from (a date includes its whole day)' }],
      ['?from=2025-10-01T12:00:00Z&to=2025-10-01T11:00:00Z', { to: expect.stringMatching(/after from/) }],
      ['?from=2025-10-01', { to: expect.stringMatching(/required with from/) }],
      ['?to=2025-10-01', { from: expect.stringMatching(/required with to/) }],
      ['?from=2015-01-01&to=2025-01-01', { to: expect.stringMatching(/at most 1096 days/) }],
      ['?from=2025-10-01&from=2025-10-02&to=2025-10-31', { from: 'must be given once' }],
    ];
    for (const [query, details] of cases) {
      const res = await usage(alice, query);
      expect({ query, status: res.status, body: res.body }).toEqual({
        query,
        status: 400,
        body: { error: { code: 'VALIDATION_FAILED', message: expect.any(String), details } },
      });
    }
    expect((await t.http().get('/api/v1/billing/usage')).status).toBe(401);
  });
});

describe('GraphQL usage', () => {
  it('answers what REST answers', async () => {
    const [rest, graph] = await Promise.all([
      usage(alice, OCTOBER),
      graphUsage(alice, { from: '2025-10-01', to: '2025-10-31' }),
    ]);
    expect(graph.total).toBe(rest.body.total);
    expect(graph.period).toEqual(rest.body.period);
    expect(
      graph.items.map((i: { machineType: string; amount: string }) => [i.machineType, i.amount]),
    ).toEqual(
      rest.body.items.map((i: { machine_type: string; amount: string }) => [i.machine_type, i.amount]),
    );
    expect(graph.storage.byteSeconds).toBe(rest.body.storage.byte_seconds);
  });

  it('gives a daily series that adds up to the totals', async () => {
    const u = await graphUsage(alice, { from: '2025-10-01', to: '2025-10-31', granularity: 'DAY' });
    expect(u.series).toHaveLength(31);
    const day = (d: number) => u.series[d - 1];
    expect(day(1)).toMatchObject({
      start: '2025-10-01T00:00:00.000Z',
      end: '2025-10-02T00:00:00.000Z',
      computeSeconds: '3600',
      computeAmount: '3.60',
      storageByteSeconds: String(3e9 * 86400),
    });
    expect(day(10)).toMatchObject({ computeSeconds: '7200', computeAmount: '7.20' });
    // cpu's 0.91 spread over 1250, 600 and 7200 seconds by largest remainder: 0.13, 0.06, 0.72
    expect(day(11)).toMatchObject({ computeSeconds: '1250', computeAmount: '0.13' });
    expect(day(12)).toMatchObject({ computeSeconds: '600', computeAmount: '0.06' });
    expect(day(16)).toMatchObject({ storageByteSeconds: String(2e9 * 86400 + 1e9 * 43200) });
    expect(day(17)).toMatchObject({ storageByteSeconds: String(2e9 * 86400) });
    for (const d of [25, 26, 27])
      expect(day(d)).toMatchObject({ computeSeconds: '86400', computeAmount: '86.40' });
    expect(day(28)).toMatchObject({ computeSeconds: '0', computeAmount: '0.00' });
    expect(day(31)).toMatchObject({ computeSeconds: '14400', computeAmount: '7.92' });

    type Bucket = { computeSeconds: string; computeAmount: string; storageAmount: string; total: string };
    const series: Bucket[] = u.series;
    expect(series.reduce((a, b) => a + Number(b.computeSeconds), 0)).toBe(277500 + 9050 + 1000);
    expect(cents(series.map((b) => b.computeAmount))).toBe(27891);
    expect(cents(series.map((b) => b.storageAmount))).toBe(25);
    expect(cents(series.map((b) => b.total))).toBe(27916);
    expect(u.total).toBe('279.16');
  });

  it('gives a monthly series with partial first and last months', async () => {
    const u = await graphUsage(alice, { from: '2025-09-15', to: '2025-11-14', granularity: 'MONTH' });
    type Bucket = { start: string; end: string; computeSeconds: string; total: string };
    expect(u.series.map((b: Bucket) => [b.start, b.end, b.computeSeconds])).toEqual([
      ['2025-09-15T00:00:00.000Z', '2025-10-01T00:00:00.000Z', '3600'],
      ['2025-10-01T00:00:00.000Z', '2025-11-01T00:00:00.000Z', '287550'],
      // the last half of the 4-machine job, and the running job's first 14 days of November
      ['2025-11-01T00:00:00.000Z', '2025-11-15T00:00:00.000Z', String(7200 + 14 * 86400)],
    ]);
    // gpu 1,490,700 s = 1490.70; cpu 16,250 s = 1.625 -> 1.63; tpu 0.50; storage over 61 days
    expect(u.items.map((i: { amount: string }) => i.amount)).toEqual(['1.63', '1490.70', '0.50']);
    expect(cents(u.series.map((b: Bucket) => b.total))).toBe(cents([u.total]));
  });

  it('breaks compute down per model, naming deleted models by id only', async () => {
    const u = await graphUsage(alice, { from: '2025-10-01', to: '2025-10-31' });
    expect(u.models).toEqual([
      // gpu 7200 + 3600 + 3 days + 7200 and cpu 1250: 277.20 + 0.13 (its share of cpu's 0.91)
      { modelId: THUMBNAIL, name: 'Image thumbnail', jobs: 5, seconds: '278450', amount: '277.33' },
      // cpu 600 + 7200, gpu 300, tpu 1000: 0.78 + 0.30 + 0.50
      { modelId: GONE_MODEL, name: null, jobs: 4, seconds: '9100', amount: '1.58' },
    ]);
  });

  it('refuses bad periods with VALIDATION_FAILED', async () => {
    const res = await t.gql(USAGE_QUERY, { from: 'soon', to: '2025-10-01' }, alice);
    expect(res.body.errors[0].extensions).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { from: expect.stringMatching(/expected a date/) },
    });
    const bad = await t.gql('{ usage(granularity: WEEK) { total } }', {}, alice);
    expect(bad.status).toBe(400);
  });
});

describe('storage ledger', () => {
  const ledger = async (assetId: string) =>
    (
      await pg.query(
        'select owner_type, owner_id, bytes::int as bytes, live_from, live_until from media_storage where asset_id = $1 order by id',
        [assetId],
      )
    ).rows;

  it('is written when an upload turns live and closed when the asset is deleted', async () => {
    const png = pngBytes(32, 32);
    const { status, body } = await uploadFile(t, carol, png);
    expect(status).toBe(200);
    const [open] = await ledger(body.media.id);
    expect(open).toMatchObject({
      owner_type: 'user',
      owner_id: owners.carol.id,
      bytes: png.length,
      live_until: null,
    });

    const growing = await usage(carol);
    expect(Number(growing.body.storage.byte_seconds)).toBeGreaterThan(0);

    expect((await t.http().delete(`/api/v1/media/${body.media.id}`).set('authorization', carol)).status).toBe(
      204,
    );
    const [closed] = await ledger(body.media.id);
    expect(closed.live_until).toBeInstanceOf(Date);
    expect(closed.live_until.getTime()).toBeGreaterThanOrEqual(closed.live_from.getTime());

    // Deleted: it no longer grows.
    const first = await usage(carol);
    await new Promise((r) => setTimeout(r, 20));
    const second = await usage(carol);
    expect(second.body.storage.byte_seconds).toBe(first.body.storage.byte_seconds);
  });

  it('follows every path that turns an asset live, resizes or removes it', async () => {
    const id = randomUUID();
    await pg.query(
      `insert into media_assets (id, owner_type, owner_id, type, status, image_name, extension, content_type, size, tags, created_at, updated_at)
       values ($1, 'user', $2, 'target_asset', 'uploading', 'out.png', 'png', 'image/png', 0, '{}', now(), now())`,
      [id, owners.carol.id],
    );
    expect(await ledger(id)).toEqual([]);
    await pg.query(`update media_assets set status = 'live', size = 500 where id = $1`, [id]);
    await pg.query(`update media_assets set size = 700 where id = $1`, [id]);
    await pg.query(`update media_assets set tags = '{x}' where id = $1`, [id]);
    await pg.query(`delete from media_assets where id = $1`, [id]);
    const rows = await ledger(id);
    expect(rows.map((r) => [r.bytes, r.live_until !== null])).toEqual([
      [500, true],
      [700, true],
    ]);
  });
});

describe('at 100k jobs', () => {
  it('answers from index scans, never a table scan, in a fixed number of statements', async () => {
    const dave = `Bearer ${await t.tokenFor('dave')}`;
    const owner = await userOwner(dave);
    // 100k jobs of 20 owners over 2025 (1 in 100 longer than a day), 20k files.
    await pg.query(
      `insert into deployments (id, owner_type, owner_id, name, model_id, args, target_asset_id, created_at)
       values ('00000000-0000-4000-8000-00000000000d', 'user', $1, 'bulk', gen_random_uuid(), '{}', gen_random_uuid(), now())`,
      [owner.id],
    );
    await pg.query(
      `insert into jobs (id, deployment_id, model_id, owner_type, owner_id, status, executor, argv, container,
         machine_type, machine_count, timeout_seconds, created_at, started_at, finished_at, run_seconds, updated_at)
       select gen_random_uuid(), '00000000-0000-4000-8000-00000000000d', md5((i % 7)::text)::uuid, 'user',
         case when i % 20 = 0 then $1::uuid else md5((i % 20)::text)::uuid end, 'succeeded', 'local', '[]', 'c',
         'gpu', 1, 3600, s, s, s + d, extract(epoch from d), now()
       from (select i, timestamptz '2025-01-01' + i * interval '5 minutes' as s,
               case when i % 100 = 0 then interval '2 days' else interval '10 minutes' end as d
             from generate_series(1, 100000) i) g`,
      [owner.id],
    );
    await pg.query(
      `insert into media_storage (asset_id, owner_type, owner_id, bytes, live_from, live_until)
       select gen_random_uuid(), 'user', case when i % 20 = 0 then $1::uuid else md5((i % 20)::text)::uuid end,
         1000, timestamptz '2025-01-01' + i * interval '20 minutes', case when i % 2 = 0 then timestamptz '2025-12-01' end
       from generate_series(1, 20000) i`,
      [owner.id],
    );
    // Ended, so in the rollup, as the statement that ends a job puts them there (all at once).
    await rollUp(
      t.runtime.orm,
      t.config.prices,
      jobsWhere(sql`deployment_id = '00000000-0000-4000-8000-00000000000d'`),
    );
    await pg.query('analyze jobs; analyze media_storage; analyze spend_daily');

    recording = [];
    const u = await graphUsage(dave, { from: '2025-06-01', to: '2025-06-30', granularity: 'DAY' });
    // Reads only: a job of an earlier test may end meanwhile, and its statement reads jobs too.
    const statements = recording.filter(
      (s) => /from (jobs|storage_daily)\b/.test(s) && !/update jobs/.test(s),
    );
    recording = undefined;
    expect(u.series).toHaveLength(30);
    // Dave's June: 432 jobs started in it (87 of two days, 6 of them cut at July 1) and 5 long
    // ones from May 29-31: 345 x 600 + 81 x 172,800 + 500,400 + 432,000 seconds.
    expect(u.items).toEqual([
      { machineType: 'gpu', jobs: 437, seconds: '15136200', unitPrice: '0.001', amount: '15136.20' },
    ]);
    // the report and the series: each the rollup, running jobs, and storage's rollups
    expect(statements).toHaveLength(6);
    for (const statement of statements) {
      const plan = await planOf(t.databaseUrl, statement);
      expect(plan).not.toMatch(/Seq Scan/);
      expect(plan).toMatch(/jobs_billing_(started|long)_index|storage_(daily|open)_pkey|spend_daily_pkey/);
    }
  });
});
