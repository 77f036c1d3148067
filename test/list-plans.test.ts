/**
 * Every list's statement at 100,000 rows of one owner (other owners' rows beside them): read
 * through its index, never a sequential scan of the owner's table, and no more rows examined
 * than the scan budget, whatever the filter (docs/architecture.md, "Lists").
 */
import { Client } from 'pg';
import { SCAN_BUDGET } from '../src/common/pagination';
import { loggedSql } from './helpers/sql';
import { startTestApp, type TestApp } from './helpers/app';

let t: TestApp;
let pg: Client;
/** The statements of the request under way, with their values. */
let recording: { sql: string; values?: readonly unknown[] }[] | undefined;

const ROWS = 100_000;

beforeAll(async () => {
  // The connection's own bound far above the list's: what ends a list statement is its class's.
  // No worker: its reconciliation's statements on `jobs` would be recorded with a request's.
  t = await startTestApp(
    { ROLES: 'api', DATABASE_QUERY_TIMEOUT_MS: '60000' },
    { onQuery: (sql, values) => recording?.push({ sql: loggedSql(sql), values }) },
  );
  pg = new Client({ connectionString: t.databaseUrl });
  await pg.connect();
}, 60_000);

afterAll(async () => {
  await pg?.end();
  await t?.close();
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

function nodesOf(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodesOf)];
}

/** The plan PostgreSQL ran for a statement, with the rows each node read. */
async function explained(s: { sql: string; values?: readonly unknown[] }): Promise<PlanNode[]> {
  const { rows } = await pg.query(`explain (analyze, format json) ${s.sql}`, s.values as unknown[]);
  return nodesOf((rows[0]['QUERY PLAN'] as { Plan: PlanNode }[])[0].Plan);
}

/** Rows a scan node looked at: those it answered and those its filter dropped. */
const examined = (n: PlanNode) => (n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0)) * n['Actual Loops'];

/** Runs `request`, then checks the plan of each statement it ran on `table`. */
async function plansOf(table: string, request: () => Promise<unknown>): Promise<PlanNode[][]> {
  recording = [];
  await request();
  const statements = recording.filter((s) => new RegExp(`from "?${table}"?\\b`).test(s.sql));
  recording = undefined;
  expect(statements.length).toBeGreaterThan(0);
  return Promise.all(statements.map(explained));
}

function expectBounded(plans: PlanNode[][], table: string, index: string | RegExp): void {
  for (const plan of plans) {
    const scans = plan.filter((n) => n['Relation Name'] === table);
    expect(scans.map((n) => n['Node Type'])).not.toContain('Seq Scan');
    expect(scans.map((n) => n['Index Name'])).toContainEqual(expect.stringMatching(index));
    for (const scan of scans) expect(examined(scan)).toBeLessThanOrEqual(SCAN_BUDGET);
  }
}

async function userOwner(auth: string): Promise<string> {
  const me = await t.gql('{ me { id } }', {}, auth);
  return me.body.data.me.id as string;
}

describe('media at 100,000 rows', () => {
  let auth: string;
  let owner: string;

  beforeAll(async () => {
    auth = `Bearer ${await t.tokenFor('many-media')}`;
    owner = await userOwner(auth);
    // The owner's rows: every one tagged `common`, 1 in 100 `mid`, 1 in 10,000 `rare`; 1 in 1,000
    // still uploading; then as many of 9 other owners.
    await pg.query(
      `insert into media_assets (id, owner_type, owner_id, type, status, image_name, extension, content_type,
                                 size, sha256, tags, created_at, updated_at)
       select gen_random_uuid(), 'user', case when i <= $2 then $1::uuid else md5((i % 9)::text)::uuid end, 'source_asset',
              case when i % 1000 = 0 then 'uploading' else 'live' end, 'f' || i || '.png', 'png', 'image/png',
              10, md5(i::text),
              array['common'] || case when i % 100 = 0 then array['mid'] else '{}' end
                              || case when i % 10000 = 7 then array['rare'] else '{}' end,
              timestamptz '2025-01-01' + i * interval '1 second', now()
       from generate_series(1, $2 * 2) i`,
      [owner, ROWS],
    );
    await pg.query('analyze media_assets');
  }, 120_000);

  const list = (query: string) => t.http().get(`/api/v1/media?${query}`).set('authorization', auth);

  it.each([
    ['limit=50'],
    ['limit=50&tags=rare,mid'],
    ['limit=50&tags=rare,absent'],
    ['limit=50&excludeTags=common'],
    ['limit=50&tags=mid&excludeTags=mid'],
  ])('GET /api/v1/media?%s reads through the live index, within the budget', async (query) => {
    expectBounded(
      await plansOf('media_assets', () => list(query).expect(200)),
      'media_assets',
      'media_assets_live_owner_index',
    );
  });

  it.each([['common'], ['mid'], ['rare'], ['absent']])(
    'GET /api/v1/media?tags=%s reads only the rows it answers: the tag index, then each asset by id',
    async (tag) => {
      const plans = await plansOf('media_tags', async () => {
        const res = await list(`limit=50&tags=${tag}`).expect(200);
        expect(res.body.media.length).toBe({ common: 50, mid: 50, rare: ROWS / 10000, absent: 0 }[tag]);
        expect(res.headers.link === undefined).toBe(tag === 'rare' || tag === 'absent');
      });
      expectBounded(plans, 'media_tags', 'media_tags_pkey');
      for (const plan of plans)
        for (const scan of plan.filter((n) => /^media_/.test(n['Relation Name'] ?? ''))) {
          expect(scan['Node Type']).not.toBe('Seq Scan');
          expect(examined(scan)).toBeLessThanOrEqual(51);
        }
    },
  );

  it("an asset's tag rows follow its tags and state", async () => {
    const [{ id }] = (
      await pg.query(
        `select id from media_assets where owner_id = $1 and 'rare' = any(tags) order by created_at desc limit 1`,
        [owner],
      )
    ).rows;
    const rare = async () =>
      (await list('limit=50&tags=rare').expect(200)).body.media.map((m: { id: string }) => m.id) as string[];
    expect(await rare()).toContain(id);
    await t
      .http()
      .put(`/api/v1/media/${id}`)
      .set('authorization', auth)
      .send({ tags: ['common', 'retagged'] })
      .expect(200);
    expect(await rare()).not.toContain(id);
    const retagged = await list('limit=50&tags=retagged').expect(200);
    expect(retagged.body.media.map((m: { id: string }) => m.id)).toEqual([id]);
    await pg.query(`update media_assets set status = 'deleting' where id = $1`, [id]);
    expect((await list('limit=50&tags=retagged').expect(200)).body.media).toEqual([]);
    await pg.query(`update media_assets set status = 'live', tags = array['common', 'rare'] where id = $1`, [
      id,
    ]);
    expect(await rare()).toContain(id);
    const tagsOf = async (of: string) =>
      (await pg.query(`select tag from media_tags where id = $1 order by tag`, [of])).rows.map((r) => r.tag);
    expect(await tagsOf(id)).toEqual(['common', 'rare']);
    // A deleted asset's tag rows go with it.
    const [made] = (
      await pg.query(
        `insert into media_assets (id, owner_type, owner_id, type, status, image_name, extension, content_type, size, tags,
                                   created_at, updated_at)
         values (gen_random_uuid(), 'user', $1, 'source_asset', 'live', 'gone.png', 'png', 'image/png', 1,
                 array['gone', 'gone', 'too'], now(), now())
         returning id`,
        [owner],
      )
    ).rows;
    expect(await tagsOf(made.id)).toEqual(['gone', 'too']);
    await pg.query('delete from media_assets where id = $1', [made.id]);
    expect(await tagsOf(made.id)).toEqual([]);
  });

  it('an exclusion that matches every row answers a short page with the cursor to go on', async () => {
    const first = await list('limit=50&excludeTags=common').expect(200);
    expect(first.body.media).toEqual([]);
    const next = /<([^>]+)>; rel="next"/.exec(first.headers.link)?.[1];
    expect(next).toBeDefined();
    // The cursor goes on from where the scan stopped, SCAN_BUDGET rows down.
    const plans = await plansOf('media_assets', async () => {
      const second = await t.http().get(next!).set('authorization', auth).expect(200);
      expect(second.body.media).toEqual([]);
      expect(second.headers.link).toMatch(/rel="next"/);
    });
    expectBounded(plans, 'media_assets', 'media_assets_live_owner_index');

    const gql = await t.gql(
      'query ($after: String) { media(filter: { excludeTags: ["common"] }, first: 50, after: $after) { nodes { id } pageInfo { hasNextPage endCursor scanLimited } } }',
      {},
      auth,
    );
    expect(gql.body.data.media).toEqual({
      nodes: [],
      pageInfo: { hasNextPage: true, endCursor: expect.any(String), scanLimited: true },
    });
  });

  it('following the cursor of short pages finds every row of rare tags, in order, and ends', async () => {
    const found: string[] = [];
    let after: string | null = null;
    let pages = 0;
    for (;;) {
      const res = await t.gql(
        'query ($after: String) { media(filter: { tags: ["rare", "absent"] }, first: 50, after: $after) { nodes { imageName } pageInfo { hasNextPage endCursor scanLimited } } }',
        { after },
        auth,
      );
      const { nodes, pageInfo } = res.body.data.media;
      found.push(...nodes.map((n: { imageName: string }) => n.imageName));
      pages++;
      if (!pageInfo.hasNextPage) break;
      expect(pageInfo.scanLimited).toBe(true);
      after = pageInfo.endCursor;
    }
    // The owner's rare rows: i % 10000 = 7 for i up to ROWS, newest first.
    const rare = Array.from({ length: ROWS / 10000 }, (_, k) => `f${ROWS - 10000 + 7 - k * 10000}.png`);
    expect(found).toEqual(rare);
    expect(pages).toBeGreaterThanOrEqual(ROWS / SCAN_BUDGET);
  });
});

describe('a list statement past its bound', () => {
  it('is canceled and answers 503, and its connection serves again', async () => {
    const auth = `Bearer ${await t.tokenFor('locked-out')}`;
    await t.http().get('/api/v1/media').set('authorization', auth).expect(200);
    // Another session holds the table: the list's statement waits past LIST_TIMEOUT_MS.
    const locker = new Client({ connectionString: t.databaseUrl });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table media_assets in access exclusive mode');
      // Without the list's own bound the request would wait for the lock: it is let go after 10 s.
      const letGo = setTimeout(() => void locker.query('rollback'), 10_000);
      const res = await t.http().get('/api/v1/media').set('authorization', auth);
      clearTimeout(letGo);
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('UNAVAILABLE');
      // Canceled on the server, not left waiting behind the lock.
      const { rows } = await pg.query(
        `select count(*)::int as n from pg_stat_activity where query like '%from media_assets%' and state = 'active' and pid <> pg_backend_pid()`,
      );
      expect(rows[0].n).toBe(0);
    } finally {
      await locker.query('rollback');
      await locker.end();
    }
    for (let i = 0; i < 12; i++) await t.http().get('/api/v1/media').set('authorization', auth).expect(200);
  });
});

describe('models, API keys and webhook messages at 100,000 rows', () => {
  let auth: string;
  let owner: string;
  const job = '00000000-0000-4000-8000-0000000000a1';

  beforeAll(async () => {
    auth = `Bearer ${await t.tokenFor('many-things')}`;
    owner = await userOwner(auth);
    // Models: 1 in 10 the owner's; all tagged `common`, 1 in 10,000 `rare`.
    await pg.query(
      `insert into models (id, name, container, args, tags, owner_type, owner_id, created_at, updated_at)
       select gen_random_uuid(), 'm' || i, 'c', '[]', array['common'] || case when i % 10000 = 7 then array['rare'] else '{}' end,
              'user', case when i % 10 = 0 then $1::uuid else md5((i % 9)::text)::uuid end,
              timestamptz '2025-01-01' + i * interval '1 second', now()
       from generate_series(1, $2 * 10) i`,
      [owner, ROWS / 10],
    );
    await pg.query(
      `insert into api_keys (id, name, key_hash, owner_type, owner_id, created_by_id, created_at)
       select gen_random_uuid(), 'k' || i, md5(i::text), 'user', case when i <= $2 then $1::uuid else md5((i % 9)::text)::uuid end,
              $1, timestamptz '2025-01-01' + i * interval '1 second'
       from generate_series(1, $2 * 2) i`,
      [owner, ROWS],
    );
    await pg.query(
      `insert into deployments (id, owner_type, owner_id, name, model_id, args, target_asset_id, created_at)
       values ('00000000-0000-4000-8000-0000000000d1', 'user', $1, 'd', gen_random_uuid(), '{}', gen_random_uuid(), now())`,
      [owner],
    );
    await pg.query(
      `insert into jobs (id, deployment_id, model_id, owner_type, owner_id, status, executor, argv, container,
                         machine_type, machine_count, timeout_seconds, created_at, updated_at)
       values ($2, '00000000-0000-4000-8000-0000000000d1', gen_random_uuid(), 'user', $1, 'succeeded', 'local', '[]', 'c',
               'cpu', 1, 60, now(), now())`,
      [owner, job],
    );
    await pg.query(
      `insert into webhook_deliveries (id, job_id, owner_type, owner_id, event, url, status, created_at)
       select 'msg_' || md5(i::text), $2, 'user', $1, 'job.succeeded', 'http://example.invalid/', 'delivered',
              timestamptz '2025-01-01' + i * interval '1 second'
       from generate_series(1, $3::int) i`,
      [owner, job, ROWS],
    );
    await pg.query('analyze models; analyze api_keys; analyze webhook_deliveries');
  }, 120_000);

  const models = (filter: string) =>
    t.gql(
      `{ models(filter: ${filter}, first: 50) { nodes { id } pageInfo { hasNextPage scanLimited } } }`,
      {},
      auth,
    );

  it.each([
    ['{}'],
    ['{ tags: ["common"] }'],
    ['{ tags: ["rare"] }'],
    ['{ mine: true }'],
    ['{ mine: true, tags: ["rare"] }'],
  ])('models(filter: %s) reads through its keyset index, within the budget', async (filter) => {
    const plans = await plansOf('models', async () =>
      expect((await models(filter)).body.errors).toBeUndefined(),
    );
    expectBounded(plans, 'models', /^models_(created_at_id|owner_created_at)_index$/);
  });

  it('an owner holding most of the catalogue reads its models through its own index, within the budget', async () => {
    // A second owner with 30 in 31 of all models (the other owners' are deleted), made among the
    // first owner's oldest, whose newer ones come before them: the planner then finds walking the
    // whole catalogue's (created_at, id) index and filtering the owner cheaper, and with equalities
    // read 20,000 rows for this page.
    const heavyAuth = `Bearer ${await t.tokenFor('most-models')}`;
    const heavy = await userOwner(heavyAuth);
    await pg.query(`delete from models where owner_id <> $1`, [owner]);
    await pg.query(
      `insert into models (id, name, container, args, tags, owner_type, owner_id, created_at, updated_at)
       select gen_random_uuid(), 'h' || i, 'c', '[]', array['common'] || case when i % 10000 = 3 then array['rare'] else '{}' end,
              'user', $1::uuid, timestamptz '2025-01-01' + (i / 3.0) * interval '1 second', now()
       from generate_series(1, $2::int * 3) i`,
      [heavy, ROWS],
    );
    await pg.query('analyze models');
    const page = (after?: string) =>
      t.gql(
        'query ($after: String) { models(filter: { mine: true, tags: ["rare"] }, first: 50, after: $after) { nodes { id } pageInfo { endCursor hasNextPage scanLimited } } }',
        { after },
        heavyAuth,
      );
    const plans = await plansOf('models', async () => expect((await page()).body.errors).toBeUndefined());
    expectBounded(plans, 'models', 'models_owner_created_at_index');
    // Paged to its end, it answers exactly the owner's rare models, newest first.
    const seen: string[] = [];
    for (let after: string | undefined, n = 0; n < 100; n++) {
      const res = await page(after);
      seen.push(...res.body.data.models.nodes.map((m: { id: string }) => m.id));
      if (!res.body.data.models.pageInfo.hasNextPage) break;
      after = res.body.data.models.pageInfo.endCursor;
    }
    const { rows } = await pg.query(
      `select id from models where owner_type = 'user' and owner_id = $1 and 'rare' = any(tags)
       order by created_at desc, id desc`,
      [heavy],
    );
    expect(seen).toEqual(rows.map((r: { id: string }) => r.id));
  });

  it('a rare tag answers a short page that says so', async () => {
    const res = await models('{ tags: ["rare"] }');
    expect(res.body.data.models.nodes.length).toBeLessThan(50);
    expect(res.body.data.models.pageInfo).toEqual({ hasNextPage: true, scanLimited: true });
  });

  it('API keys read through the owner index', async () => {
    const plans = await plansOf('api_keys', () =>
      t.http().get('/api/v1/tokens?limit=50').set('authorization', auth).expect(200),
    );
    expectBounded(plans, 'api_keys', 'api_keys_owner_created_at_index');
  });

  it("a job's webhook messages read through the job index", async () => {
    const plans = await plansOf('webhook_deliveries', async () => {
      const res = await t.gql(
        'query ($job: ID!) { webhookDeliveries(jobId: $job, first: 50) { nodes { id } } }',
        { job },
        auth,
      );
      expect(res.body.data.webhookDeliveries.nodes).toHaveLength(50);
    });
    expectBounded(plans, 'webhook_deliveries', 'webhook_deliveries_job_created_at_id_index');
  });
});

describe("a team's audit log at 100,000 records", () => {
  let auth: string;
  let team: string;

  beforeAll(async () => {
    auth = `Bearer ${await t.tokenFor('auditor')}`;
    const made = await t.gql(
      'mutation ($input: CreateTeamInput!) { createTeam(input: $input) { id } }',
      { input: { name: 'audited' } },
      auth,
    );
    team = made.body.data.createTeam.id;
    // The team's records (1 in 10,000 `api_key.created`), then as many of other teams.
    await pg.query(
      `insert into team_audit (id, team_id, created_at, actor_via, action, target_type, details)
       select gen_random_uuid(), case when i <= $2 then $1::uuid else md5((i % 9)::text)::uuid end,
              timestamptz '2025-01-01' + i * interval '1 second', 'user_token',
              case when i % 10000 = 7 then 'api_key.created' else 'member.role_changed' end, 'member', '{}'
       from generate_series(1, $2 * 2) i`,
      [team, ROWS],
    );
    await pg.query('analyze team_audit');
  }, 120_000);

  it.each([
    [''],
    ['&action=api_key.created'],
    ['&action=member.role_changed'],
    [`&actor=00000000-0000-4000-8000-000000000000`],
  ])(
    'GET /api/v1/teams/:id/audit?limit=50%s reads through the team index, within the budget',
    async (query) => {
      const plans = await plansOf('team_audit', () =>
        t.http().get(`/api/v1/teams/${team}/audit?limit=50${query}`).set('authorization', auth).expect(200),
      );
      expectBounded(plans, 'team_audit', 'team_audit_team_created_at_id_index');
    },
  );
});

describe('jobs at 10,000 rows', () => {
  // Small tables are where a plain join went wrong: PostgreSQL hashed all 10,000 deployments for
  // a page of 50 (2 ms a page; docs/performance.md, Lists). Run before the 100,000 rows below.
  it('GET /api/v1/jobs looks up each job of the page its deployment and model by id', async () => {
    const auth = `Bearer ${await t.tokenFor('some-jobs')}`;
    const owner = await userOwner(auth);
    await pg.query(
      `with d as (
         insert into deployments (id, owner_type, owner_id, name, model_id, args, target_asset_id, created_at)
         select gen_random_uuid(), 'user', $1::uuid, 'd' || i, md5('small' || (i % 5))::uuid, '{}', gen_random_uuid(),
                timestamptz '2025-01-01' + i * interval '1 second'
         from generate_series(1, 10000) i returning id, model_id, created_at)
       insert into jobs (id, deployment_id, model_id, owner_type, owner_id, status, executor, argv, container,
                         machine_type, machine_count, timeout_seconds, created_at, updated_at)
       select gen_random_uuid(), id, model_id, 'user', $1::uuid, 'succeeded', 'local', '[]', 'c', 'cpu', 1, 60,
              created_at, created_at from d`,
      [owner],
    );
    await pg.query('analyze deployments; analyze jobs; analyze models');
    const plans = await plansOf('jobs', () =>
      t
        .gql('{ jobs(first: 50) { nodes { id model { id name } deployment { id name } } } }', {}, auth)
        .then((res) => expect(res.body.data.jobs.nodes).toHaveLength(50)),
    );
    for (const plan of plans) {
      const deployments = plan.filter((n) => n['Relation Name'] === 'deployments');
      expect(deployments.map((n) => n['Node Type'])).not.toContain('Seq Scan');
      expect(deployments.map((n) => n['Index Name'])).toEqual(deployments.map(() => 'deployments_pkey'));
      for (const scan of deployments) expect(examined(scan)).toBeLessThanOrEqual(51);
    }
  });
});

describe('jobs and deployments at 100,000 rows', () => {
  let auth: string;
  let owner: string;
  /** The owner's models: 1 in 5 of its jobs run `common`, 1 in 10,000 `rare`. */
  const common = '00000000-0000-4000-8000-00000000c001';
  const rare = '00000000-0000-4000-8000-00000000c002';

  beforeAll(async () => {
    auth = `Bearer ${await t.tokenFor('many-jobs')}`;
    owner = await userOwner(auth);
    // The owner's deployments, each with one job (1 in 100 failed), then as many of 9 other owners.
    await pg.query(
      `insert into deployments (id, owner_type, owner_id, name, model_id, args, target_asset_id, created_at)
       select md5('d' || i)::uuid, 'user', case when i <= $2 then $1::uuid else md5((i % 9)::text)::uuid end, 'd' || i,
              case when i % 10000 = 7 then $4::uuid when i % 5 = 0 then $3::uuid else md5('m' || (i % 5))::uuid end,
              '{}', gen_random_uuid(), timestamptz '2025-01-01' + i * interval '1 second'
       from generate_series(1, $2 * 2) i`,
      [owner, ROWS, common, rare],
    );
    await pg.query(
      `insert into jobs (id, deployment_id, model_id, owner_type, owner_id, status, executor, argv, container,
                         machine_type, machine_count, timeout_seconds, created_at, updated_at)
       select id, id, model_id, owner_type, owner_id,
              case when substr(name, 2)::int % 100 = 0 then 'failed' else 'succeeded' end,
              'local', '[]', 'c', 'cpu', 1, 60, created_at, created_at
       from deployments where name ~ '^d[0-9]+$'`,
    );
    await pg.query('analyze deployments; analyze jobs');
  }, 120_000);

  const jobs = (query: string) => t.http().get(`/api/v1/jobs?${query}`).set('authorization', auth);

  it.each([
    ['limit=50', 'jobs_owner_type_owner_id_created_at_id_index'],
    ['limit=50&status=failed', 'jobs_owner_status_created_at_index'],
    [`limit=50&model_id=${common}`, 'jobs_owner_model_created_at_index'],
    // 20 jobs in all run the rare model: the planner may as well take them all by model alone.
    [`limit=50&model_id=${rare}`, /jobs_owner_model_created_at_index|jobs_model_id_index/],
  ])(
    'GET /api/v1/jobs?%s reads only the rows it answers, through %s, and its deployments by id',
    async (query, index) => {
      const plans = await plansOf('jobs', () => jobs(query).expect(200));
      expectBounded(plans, 'jobs', index);
      for (const plan of plans) {
        for (const scan of plan.filter((n) => n['Relation Name'] === 'jobs'))
          expect(examined(scan)).toBeLessThanOrEqual(51);
        // Joined to the page's jobs only: a lookup per job, never a scan of the deployments.
        const deployments = plan.filter((n) => n['Relation Name'] === 'deployments');
        expect(deployments.map((n) => n['Index Name'])).toEqual(deployments.map(() => 'deployments_pkey'));
        for (const scan of deployments) expect(examined(scan)).toBeLessThanOrEqual(51);
      }
    },
  );

  it('status and model together: the status index leads, the model is checked within the budget', async () => {
    // (With a status on most rows, the planner may rather read the owner index and check the status.)
    const plans = await plansOf('jobs', async () =>
      expect((await jobs(`limit=50&status=failed&model_id=${rare}`).expect(200)).body).toEqual([]),
    );
    expectBounded(plans, 'jobs', 'jobs_owner_status_created_at_index');
    for (const plan of plans) {
      const deployments = plan.filter((n) => n['Relation Name'] === 'deployments');
      expect(deployments.map((n) => n['Node Type'])).not.toContain('Seq Scan');
      for (const scan of deployments) expect(examined(scan)).toBeLessThanOrEqual(51);
    }
  });

  it('following the cursor of short pages finds every job of both filters, in order, with its deployment', async () => {
    const found: { id: string; status: string; modelId: string; deployment: { name: string } }[] = [];
    let after: string | null = null;
    for (;;) {
      const res = await t.gql(
        'query ($m: ID!, $after: String) { jobs(filter: { status: SUCCEEDED, modelId: $m }, first: 50, after: $after) { nodes { id status modelId deployment { name } } pageInfo { hasNextPage endCursor scanLimited } } }',
        { m: rare, after },
        auth,
      );
      expect(res.body.errors).toBeUndefined();
      const { nodes, pageInfo } = res.body.data.jobs;
      found.push(...nodes);
      if (!pageInfo.hasNextPage) break;
      expect(pageInfo.scanLimited).toBe(true);
      after = pageInfo.endCursor;
    }
    const { rows } = await pg.query(
      `select j.id, d.name from jobs j join deployments d on d.id = j.deployment_id
       where j.owner_id = $1 and j.model_id = $2 and j.status = 'succeeded' order by j.created_at desc, j.id desc`,
      [owner, rare],
    );
    expect(rows.length).toBe(ROWS / 10000);
    expect(found).toEqual(
      rows.map((r) => ({ id: r.id, status: 'SUCCEEDED', modelId: rare, deployment: { name: r.name } })),
    );
  });

  it('failed jobs page by page through the status index: every one, in order', async () => {
    const ids: string[] = [];
    let path: string | undefined = '/api/v1/jobs?limit=100&status=failed';
    while (path) {
      const res: { body: { id: string }[]; headers: Record<string, string> } = await t
        .http()
        .get(path)
        .set('authorization', auth)
        .expect(200);
      ids.push(...res.body.map((j) => j.id));
      path = /<([^>]+)>; rel="next"/.exec(res.headers.link ?? '')?.[1];
      if (path?.startsWith('http')) path = new URL(path).pathname + new URL(path).search;
    }
    const { rows } = await pg.query(
      `select id from jobs where owner_id = $1 and status = 'failed' order by created_at desc, id desc`,
      [owner],
    );
    expect(rows.length).toBe(ROWS / 100);
    expect(ids).toEqual(rows.map((r) => r.id));
  });

  it('GET /api/v1/deployments reads through the owner index, within the budget', async () => {
    const plans = await plansOf('deployments', async () => {
      const res = await t.http().get('/api/v1/deployments?limit=50').set('authorization', auth).expect(200);
      expect(res.body).toHaveLength(50);
      expect(res.body[0]).toMatchObject({ name: `d${ROWS}`, job: { status: 'failed' } });
    });
    expectBounded(plans, 'deployments', /^deployments_(owner_type_owner_id_created_at_id_index|pkey)$/);
    for (const plan of plans)
      for (const scan of plan.filter((n) => n['Relation Name'] === 'deployments'))
        expect(examined(scan)).toBeLessThanOrEqual(51);
  });
});

describe('jobs by cost at 100,000 rows', () => {
  let auth: string;
  let owner: string;
  /** The owner's machine types (default prices: cpu 0.00002, gpu and the rest 0.0008 a second). */
  const TYPES = ['cpu', 'gpu', 'tpu', 'a100'];
  const deployment = '00000000-0000-4000-8000-0000000c0570';

  beforeAll(async () => {
    auth = `Bearer ${await t.tokenFor('costly-jobs')}`;
    owner = await userOwner(auth);
    await pg.query(
      `insert into deployments (id, owner_type, owner_id, name, model_id, args, target_asset_id, created_at)
       values ($2, 'user', $1, 'costly', md5('costly')::uuid, '{}', gen_random_uuid(), now())`,
      [owner, deployment],
    );
    // The owner's ended jobs over 4 machine types, 1 in 10 never ran (cost 0: a tie across types),
    // and 1,000 not ended; as many ended jobs of 9 other owners, costing more.
    await pg.query(
      `insert into jobs (id, deployment_id, model_id, owner_type, owner_id, status, executor, argv, container,
                         machine_type, machine_count, timeout_seconds, created_at, updated_at, machine_micros)
       select gen_random_uuid(), $3, md5('costly')::uuid, 'user',
              case when i <= $2 then $1::uuid else md5((i % 9)::text)::uuid end,
              case when i % 100 = 1 and i <= $2 then 'queued' else 'succeeded' end, 'local', '[]', 'c',
              ($4::text[])[1 + i % 4], 1, 60, timestamptz '2025-01-01' + i * interval '1 second', now(),
              case when i % 100 = 1 and i <= $2 then null
                   when i % 10 = 0 then 0
                   else (i * 7919 % 100003)::bigint * 1000 * (case when i <= $2 then 1 else 7 end) end
       from generate_series(1, $2 * 2) i`,
      [owner, ROWS, deployment, TYPES],
    );
    await pg.query('analyze jobs');
  }, 120_000);

  /** The owner's ended jobs in the cost order, by a plain sort of all of them (the reference). */
  async function sorted(direction: 'desc' | 'asc', count: number): Promise<string[]> {
    const { rows } = await pg.query(
      `select id from jobs where owner_type = 'user' and owner_id = $1 and machine_micros is not null
       order by machine_micros * case machine_type when 'cpu' then 0.00002 else 0.0008 end ${direction},
                machine_micros ${direction}, id ${direction}
       limit $2`,
      [owner, count],
    );
    return rows.map((r) => r.id as string);
  }

  const next = (link: string | undefined) => /<([^>]+)>; rel="next"/.exec(link ?? '')?.[1];

  it.each([['cost'], ['cost_asc']])(
    'GET /api/v1/jobs?sort=%s merges one index read per machine type: pages in order, each bounded',
    async (sort) => {
      const ids: string[] = [];
      let path: string | undefined = `/api/v1/jobs?sort=${sort}&limit=50`;
      for (let page = 0; page < 4; page++) {
        const plans = await plansOf('jobs', async () => {
          const res = await t.http().get(path!).set('authorization', auth).expect(200);
          expect(res.body).toHaveLength(50);
          ids.push(...res.body.map((j: { id: string }) => j.id));
          path = next(res.headers.link);
        });
        expectBounded(plans, 'jobs', 'jobs_owner_cost_index');
        for (const plan of plans) {
          const scans = plan.filter((n) => n['Relation Name'] === 'jobs');
          // Each type's read stops after a page and one (its rows are in cost order); the skip
          // scan takes one step per type.
          expect(scans.map((n) => n['Index Name'])).toEqual(scans.map(() => 'jobs_owner_cost_index'));
          for (const scan of scans) expect(examined(scan)).toBeLessThanOrEqual(TYPES.length * 51);
        }
      }
      expect(ids).toEqual(await sorted(sort === 'cost' ? 'desc' : 'asc', 200));
    },
  );

  it("a cursor among the jobs that never ran (cost 0 in every type) goes on within each type's index", async () => {
    // Ascending, the first 10,000 jobs all cost 0: ties across types, ordered by machine time and id.
    const expected = await sorted('asc', 3200);
    const first = await t
      .http()
      .get('/api/v1/jobs?sort=cost_asc&limit=200')
      .set('authorization', auth)
      .expect(200);
    expect(first.body.map((j: { id: string }) => j.id)).toEqual(expected.slice(0, 200));
    let path = next(first.headers.link);
    for (let i = 1; i < 15; i++)
      path = next((await t.http().get(path!).set('authorization', auth).expect(200)).headers.link);
    // The 16th page: jobs 3,001 to 3,200, all of cost 0.
    const plans = await plansOf('jobs', async () => {
      const res = await t.http().get(path!).set('authorization', auth).expect(200);
      expect(res.body.map((j: { id: string }) => j.id)).toEqual(expected.slice(3000, 3200));
      expect(res.body.every((j: { cost: { amount: string } }) => Number(j.cost.amount) === 0)).toBe(true);
    });
    expectBounded(plans, 'jobs', 'jobs_owner_cost_index');
    for (const plan of plans)
      for (const scan of plan.filter((n) => n['Relation Name'] === 'jobs'))
        expect(examined(scan)).toBeLessThanOrEqual(TYPES.length * 201);
  });
});

describe('batches at 100,000 jobs', () => {
  let auth: string;

  it('GET /api/v1/batches reads no job of an ended batch, and only the jobs of running ones', async () => {
    auth = `Bearer ${await t.tokenFor('many-batches')}`;
    const owner = await userOwner(auth);
    // 60 batches of 1,650 jobs each (99,000): the two newest still running (one job of each
    // queued), the rest ended with the progress their completion check kept.
    await pg.query(
      `with b as (
         insert into batches (id, owner_type, owner_id, name, model_id, args, inputs, status, total, created_at,
                              completion_sent_at, final_progress)
         select gen_random_uuid(), 'user', $1::uuid, 'b' || i, gen_random_uuid(), '{}', '{"items": 1650}', 'running', 1650,
                timestamptz '2025-01-01' + i * interval '1 hour',
                case when i <= 58 then now() end,
                case when i <= 58 then jsonb_build_object('counts', jsonb_build_object('queued', 0, 'starting', 0,
                  'running', 0, 'succeeded', 1650, 'failed', 0, 'canceled', 0), 'live', 0, 'startedAt', null,
                  'finishedAt', null, 'runSeconds', 1650) end
         from generate_series(1, 60) i returning id, created_at, final_progress),
       d as (
         insert into deployments (id, owner_type, owner_id, name, model_id, args, target_asset_id, created_at)
         select b.id, 'user', $1::uuid, 'd', gen_random_uuid(), '{}', gen_random_uuid(), b.created_at from b
         returning id)
       insert into jobs (id, deployment_id, model_id, owner_type, owner_id, status, executor, argv, container,
                         machine_type, machine_count, timeout_seconds, created_at, updated_at, batch_id, batch_item)
       select gen_random_uuid(), b.id, gen_random_uuid(), 'user', $1::uuid,
              case when b.final_progress is null and k = 0 then 'queued' else 'succeeded' end, 'local', '[]', 'c', 'cpu',
              1, 60, b.created_at, b.created_at, b.id, k
       from b, generate_series(0, 1649) k where (select count(*) from d) > 0`,
      [owner],
    );
    await pg.query('analyze batches; analyze jobs');
    const plans = await plansOf('jobs', () =>
      t
        .http()
        .get('/api/v1/batches?limit=50')
        .set('authorization', auth)
        .then((res) => {
          expect(res.status).toBe(200);
          expect(res.body).toHaveLength(50);
          expect(res.body.slice(0, 2).map((b: { counts: { queued: number } }) => b.counts.queued)).toEqual([
            1, 1,
          ]);
          expect(res.body.slice(2).every((b: { status: string }) => b.status === 'completed')).toBe(true);
        }),
    );
    const jobScans = plans.flat().filter((n) => n['Relation Name'] === 'jobs');
    expect(jobScans.map((n) => n['Node Type'])).not.toContain('Seq Scan');
    // Each running batch's jobs (and a probe per retry), never the 48 ended ones'.
    expect(jobScans.reduce((sum, n) => sum + examined(n), 0)).toBeLessThanOrEqual(2 * 1650 * 2 + 48);
  });

  it("GET /api/v1/batches/{id}/jobs reads the oldest batch's jobs through the batch's own index", async () => {
    const { rows } = await pg.query(
      `select id from batches where owner_id = (select owner_id from batches where name = 'b1' limit 1) order by created_at limit 1`,
    );
    const plans = await plansOf('jobs', () =>
      t
        .http()
        .get(`/api/v1/batches/${rows[0].id}/jobs?limit=50`)
        .set('authorization', auth)
        .then((res) => expect(res.body).toHaveLength(50)),
    );
    expectBounded(plans, 'jobs', 'jobs_batch_created_at_index');
    const scans = plans.flat().filter((n) => n['Relation Name'] === 'jobs');
    for (const scan of scans) expect(examined(scan)).toBeLessThanOrEqual(51);
  });
});
