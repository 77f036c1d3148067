/**
 * `npm run bench -- scale`: every list and filter at two sizes of one owner's data, in one run
 * against one embedded PostgreSQL: one owner holds BENCH_SMALL rows of each kind, another
 * BENCH_LARGE (each the other's "other owner"). Media are copied in SQL from one real upload,
 * tagged `common` (every row), `mid` (1 in 100) and `rare` (1 in 10,000); jobs (in batches of
 * 10,000), deployments, batches, models, API keys and a job's webhook messages are made in SQL.
 *
 * Each request runs BENCH_SECONDS under autocannon with BENCH_CONNECTIONS connections against
 * each owner in turn; the table prints p50, p99, requests/s at both sizes, the ratio
 * (large/small requests/s; the target is >= 0.5) and the plan of each statement of one request
 * at the large size, read from PostgreSQL's auto_explain: each scan of a table, its index and
 * the rows it examined (answered + removed by its filter). The one-minute load average is
 * printed beside (the machine may be shared). `--smoke` runs it on tiny sizes in seconds.
 */
import autocannon from 'autocannon';
import { createHash } from 'node:crypto';
import { Client } from 'pg';
import { load, printTable, setting, SMOKE, startService, upload } from './lib';

const SMALL = setting('BENCH_SMALL', 10_000, 100);
const LARGE = setting('BENCH_LARGE', 1_000_000, 1_000);
const SECONDS = setting('BENCH_SECONDS', 5, 1);
const CONNECTIONS = setting('BENCH_CONNECTIONS', 4, 2);
/** Only the shapes whose name matches (e.g. BENCH_ONLY=media), to run a part. */
const ONLY = new RegExp(process.env.BENCH_ONLY ?? '');

interface Owner {
  auth: string;
  id: string;
  rows: number;
  /** A job of the owner that carries `rows` webhook messages. */
  job: string;
  /** One of the 5 models the owner's jobs run. */
  model: string;
  /** `/api/v1/media?limit=50`, 20 pages down. */
  page20: string;
  /** A team the owner owns, with `rows` audit records. */
  team: string;
  /** The owner's oldest batch of jobs (jobs are seeded in batches of 10,000): the last to reach. */
  batch: string;
}

type Kind = 'media' | 'jobs' | 'batches' | 'models' | 'keys' | 'webhooks' | 'audit';

interface Shape {
  name: string;
  /** The rows it reads (only those of the chosen shapes are made). */
  kind: Kind;
  request(o: Owner): { path: string; method?: 'GET' | 'POST'; body?: string };
}

const gql = (query: string, variables: Record<string, unknown> = {}) => ({
  path: '/graphql',
  method: 'POST' as const,
  body: JSON.stringify({ query, variables }),
});

const SHAPES: Shape[] = [
  { name: 'media', kind: 'media', request: () => ({ path: '/api/v1/media?limit=50' }) },
  { name: 'media, 20 pages down (cursor)', kind: 'media', request: (o) => ({ path: o.page20 }) },
  {
    name: 'media tags=common (every row)',
    kind: 'media',
    request: () => ({ path: '/api/v1/media?limit=50&tags=common' }),
  },
  {
    name: 'media tags=mid (1 in 100)',
    kind: 'media',
    request: () => ({ path: '/api/v1/media?limit=50&tags=mid' }),
  },
  {
    name: 'media tags=rare (1 in 10,000)',
    kind: 'media',
    request: () => ({ path: '/api/v1/media?limit=50&tags=rare' }),
  },
  {
    name: 'media excludeTags=common (excludes every row)',
    kind: 'media',
    request: () => ({ path: '/api/v1/media?limit=50&excludeTags=common' }),
  },
  {
    name: 'media type=target_asset (none)',
    kind: 'media',
    request: () => gql('{ media(filter: { type: TARGET_ASSET }, first: 50) { nodes { id } } }'),
  },
  { name: 'jobs', kind: 'jobs', request: () => ({ path: '/api/v1/jobs?limit=50' }) },
  {
    name: 'jobs status=failed (1 in 100)',
    kind: 'jobs',
    request: () => ({ path: '/api/v1/jobs?limit=50&status=failed' }),
  },
  {
    name: 'jobs by model (1 in 5)',
    kind: 'jobs',
    request: (o) => ({ path: `/api/v1/jobs?limit=50&model_id=${o.model}` }),
  },
  // Three machine types of two prices (docs/governance.md, "Sorting by cost"); cheapest first
  // starts among the 1 in 10 that never ran (cost 0 in every type).
  { name: 'jobs sort=cost', kind: 'jobs', request: () => ({ path: '/api/v1/jobs?limit=50&sort=cost' }) },
  {
    name: 'jobs sort=cost_asc',
    kind: 'jobs',
    request: () => ({ path: '/api/v1/jobs?limit=50&sort=cost_asc' }),
  },
  { name: 'deployments', kind: 'jobs', request: () => ({ path: '/api/v1/deployments?limit=50' }) },
  {
    name: "a batch's jobs (10,000)",
    kind: 'jobs',
    request: (o) => ({ path: `/api/v1/batches/${o.batch}/jobs?limit=50` }),
  },
  {
    name: "a batch's jobs, status=failed (1 in 100)",
    kind: 'jobs',
    request: (o) => ({ path: `/api/v1/batches/${o.batch}/jobs?limit=50&status=failed` }),
  },
  { name: 'batches', kind: 'batches', request: () => ({ path: '/api/v1/batches?limit=50' }) },
  {
    name: 'billing usage, this month (files and jobs)',
    kind: 'media',
    request: () => ({ path: '/api/v1/billing/usage' }),
  },
  {
    name: 'models mine, tag common',
    kind: 'models',
    request: () => gql('{ models(filter: { mine: true, tags: ["common"] }, first: 50) { nodes { id } } }'),
  },
  {
    name: 'models mine, tag rare',
    kind: 'models',
    request: () => gql('{ models(filter: { mine: true, tags: ["rare"] }, first: 50) { nodes { id } } }'),
  },
  { name: 'API keys', kind: 'keys', request: () => ({ path: '/api/v1/tokens?limit=50' }) },
  {
    name: "a job's webhook messages",
    kind: 'webhooks',
    request: (o) =>
      gql('query ($job: ID!) { webhookDeliveries(jobId: $job, first: 50) { nodes { id } } }', { job: o.job }),
  },
  {
    name: "a team's audit log",
    kind: 'audit',
    request: (o) => ({ path: `/api/v1/teams/${o.team}/audit?limit=50` }),
  },
  {
    name: "a team's audit log, action=api_key.created (1 in 10,000)",
    kind: 'audit',
    request: (o) => ({ path: `/api/v1/teams/${o.team}/audit?limit=50&action=api_key.created` }),
  },
];

/** One owner's rows of every kind, made in SQL (media copied from one real upload). */
async function seed(db: Client, url: string, o: Owner, kinds: Set<Kind>): Promise<void> {
  if (kinds.has('media')) await seedMedia(db, url, o);
  if (kinds.has('jobs') || kinds.has('webhooks')) await seedJobs(db, o);
  if (kinds.has('batches')) await seedBatches(db, o, o.rows, o.rows);
  if (kinds.has('models')) await seedModels(db, o);
  if (kinds.has('keys')) await seedKeys(db, o);
  if (kinds.has('webhooks')) await seedWebhooks(db, o);
  if (kinds.has('audit')) await seedAudit(db, o);
}

async function seedMedia(db: Client, url: string, o: Owner): Promise<void> {
  await upload(`${url}/uploads/upload`, { authorization: o.auth }, 1024, 'seed.png');
  await db.query(
    `insert into media_assets (id, owner_type, owner_id, type, status, image_name, extension, content_type,
                               size, sha256, tags, created_at, updated_at)
     select gen_random_uuid(), owner_type, owner_id, type, status, 'copy-' || i || '-' || image_name, extension,
            content_type, size, sha256,
            array['common'] || case when i % 100 = 0 then array['mid'] else '{}' end
                            || case when i % 10000 = 7 then array['rare'] else '{}' end,
            created_at - i * interval '1 second', updated_at
     from media_assets, generate_series(1, $2::int - 1) i where owner_id = $1`,
    [o.id, o.rows],
  );
}

/**
 * `count` ended batches of the owner (ids from `first` on), each with the progress its
 * completion check keeps (so lists read no jobs of them), newest last.
 */
async function seedBatches(db: Client, o: Owner, count: number, first: number): Promise<void> {
  await db.query(
    `insert into batches (id, owner_type, owner_id, name, model_id, args, inputs, status, total, created_at,
                          completion_sent_at, final_progress)
     select md5($1::text || 'b' || i)::uuid, 'user', $1::uuid, 'b' || i, md5($1::text || 0)::uuid, '{}', '{"items": 10000}',
            'running', 10000, now() - ($2::int + $3::int - i) * interval '1 second', now(),
            jsonb_build_object('counts', jsonb_build_object('queued', 0, 'starting', 0, 'running', 0,
              'succeeded', 9900, 'failed', 100, 'canceled', 0), 'live', 0, 'startedAt', null, 'finishedAt', null,
              'runSeconds', 0)
     from generate_series($3::int, $3::int + $2::int - 1) i`,
    [o.id, count, first],
  );
}

async function seedJobs(db: Client, o: Owner): Promise<void> {
  // Jobs in batches of 10,000 (batch k holds jobs 10,000 k + 1 to 10,000 (k + 1)).
  await seedBatches(db, o, Math.ceil(o.rows / 10_000), 0);
  await db.query(
    `insert into deployments (id, owner_type, owner_id, name, model_id, args, target_asset_id, created_at)
     select md5($1::text || i)::uuid, 'user', $1::uuid, 'd' || i, md5($1::text || (i % 5))::uuid, '{}', gen_random_uuid(),
            now() - i * interval '1 second'
     from generate_series(1, $2::int) i`,
    [o.id, o.rows],
  );
  await db.query(
    `insert into jobs (id, deployment_id, model_id, owner_type, owner_id, status, executor, argv, container,
                       machine_type, machine_count, timeout_seconds, created_at, updated_at, machine_micros,
                       batch_id, batch_item)
     select md5($1::text || i)::uuid, md5($1::text || i)::uuid, md5($1::text || (i % 5))::uuid, 'user', $1::uuid,
            case when i % 100 = 0 then 'failed' else 'succeeded' end, 'local', '[]', 'c',
            (array['cpu', 'gpu', 'a100'])[1 + i % 3], 1, 60, now() - i * interval '1 second', now(),
            case when i % 10 = 0 then 0 else (i::bigint * 7919 % 100003) * 1000 end,
            md5($1::text || 'b' || ((i - 1) / 10000))::uuid, (i - 1) % 10000
     from generate_series(1, $2::int) i`,
    [o.id, o.rows],
  );
}

async function seedModels(db: Client, o: Owner): Promise<void> {
  await db.query(
    `insert into models (id, name, container, args, tags, owner_type, owner_id, created_at, updated_at)
     select gen_random_uuid(), 'm' || i, 'c', '[]',
            array['common'] || case when i % 10000 = 7 then array['rare'] else '{}' end,
            'user', $1::uuid, now() - i * interval '1 second', now()
     from generate_series(1, $2::int) i`,
    [o.id, o.rows],
  );
}

async function seedKeys(db: Client, o: Owner): Promise<void> {
  await db.query(
    `insert into api_keys (id, name, key_hash, owner_type, owner_id, created_by_id, created_at)
     select gen_random_uuid(), 'k' || i, md5($1::text || i), 'user', $1::uuid, $1::uuid, now() - i * interval '1 second'
     from generate_series(1, $2::int) i`,
    [o.id, o.rows],
  );
}

async function seedWebhooks(db: Client, o: Owner): Promise<void> {
  await db.query(
    `insert into webhook_deliveries (id, job_id, owner_type, owner_id, event, url, status, created_at)
     select 'msg_' || md5($1::text || i), md5($1::text || 1)::uuid, 'user', $1::uuid, 'job.succeeded', 'http://example.invalid/',
            'delivered', now() - i * interval '1 second'
     from generate_series(1, $2::int) i`,
    [o.id, o.rows],
  );
}

async function seedAudit(db: Client, o: Owner): Promise<void> {
  await db.query(
    `insert into team_audit (id, team_id, created_at, actor_via, action, target_type, details)
     select gen_random_uuid(), $1, now() - i * interval '1 second', 'user_token',
            case when i % 10000 = 7 then 'api_key.created' else 'member.role_changed' end, 'member', '{}'
     from generate_series(1, $2::int) i`,
    [o.team, o.rows],
  );
}

/** PostgreSQL's log, as it comes; auto_explain writes each plan there. */
let pgLog = '';

/** The plans PostgreSQL logged in `text` (auto_explain, JSON format). */
function plansIn(text: string): PlanNode[] {
  const plans: PlanNode[] = [];
  for (let at = text.indexOf('plan:'); at >= 0; at = text.indexOf('plan:', at + 1)) {
    const start = text.indexOf('{', at);
    // The plan's JSON ends at the first closing brace after which it parses.
    for (let end = text.indexOf('}', start); end >= 0; end = text.indexOf('}', end + 1)) {
      try {
        plans.push((JSON.parse(text.slice(start, end + 1)) as { Plan: PlanNode }).Plan);
        break;
      } catch {
        // not yet the end
      }
    }
  }
  return plans;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

/** Each scan of a table in a plan: its kind, index and the rows it examined. */
function scansOf(node: PlanNode): string[] {
  const own = node['Relation Name']
    ? [
        `${node['Node Type']}${node['Index Name'] ? ` ${node['Index Name']}` : ` ${node['Relation Name']}`}: ` +
          `${(node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0)) * node['Actual Loops']} rows`,
      ]
    : [];
  return [...own, ...(node.Plans ?? []).flatMap(scansOf)];
}

async function send(base: string, auth: string, r: ReturnType<Shape['request']>): Promise<void> {
  const res = await fetch(base + r.path, {
    method: r.method ?? 'GET',
    body: r.body,
    headers: { authorization: auth, 'content-type': 'application/json' },
  });
  const body = (await res.json()) as { errors?: unknown };
  if (!res.ok || body.errors) throw new Error(`${r.path} answered ${res.status}: ${JSON.stringify(body)}`);
}

/** The plans of one request's statements, logged by auto_explain while it ran. */
async function plansOf(admin: Client, base: string, auth: string, r: ReturnType<Shape['request']>) {
  await admin.query(`alter system set auto_explain.log_min_duration = 0`);
  await admin.query('select pg_reload_conf()');
  // The service's sessions read the setting at their next statement; the log comes a moment later.
  await new Promise((done) => setTimeout(done, 50));
  pgLog = '';
  await send(base, auth, r);
  // Until the log has been quiet a moment (it comes through the server's stderr).
  for (let seen = -1, waited = 0; seen !== pgLog.length && waited < 3000; waited += 250) {
    seen = pgLog.length;
    await new Promise((done) => setTimeout(done, 250));
  }
  await admin.query(`alter system set auto_explain.log_min_duration = -1`);
  await admin.query('select pg_reload_conf()');
  return plansIn(pgLog)
    .map(scansOf)
    .filter((s) => s.length)
    .map((s) => s.join(', '))
    .join('; ');
}

async function cannon(base: string, auth: string, r: ReturnType<Shape['request']>) {
  const result = await autocannon({
    url: base + r.path,
    method: r.method ?? 'GET',
    body: r.body,
    headers: { authorization: auth, 'content-type': 'application/json' },
    connections: CONNECTIONS,
    // Smoke: a few requests each, so that the whole run takes seconds.
    ...(SMOKE ? { amount: 10 } : { duration: SECONDS }),
  });
  if (result.non2xx || result.errors)
    throw new Error(`${r.path}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

export async function run(): Promise<void> {
  const sut = await startService({}, { preload: ['auto_explain'], onPgLog: (text) => (pgLog += text) });
  const db = new Client({ connectionString: sut.db.url });
  await db.connect();
  try {
    for (const s of ['log_analyze = on', 'log_format = json', 'log_timing = off', 'log_min_duration = -1'])
      await db.query(`alter system set auto_explain.${s}`);
    await db.query('select pg_reload_conf()');
    const base = sut.service.url;
    const owners: Owner[] = [];
    const shapes = SHAPES.filter((s) => ONLY.test(s.name));
    const kinds = new Set(shapes.map((s) => s.kind));
    const seeding = Date.now();
    for (const [name, rows] of [
      ['scale-small', SMALL],
      ['scale-large', LARGE],
    ] as const) {
      const auth = `Bearer ${await sut.token(name)}`;
      const ask = async <T>(query: string): Promise<T> => {
        const res = await fetch(`${base}/graphql`, {
          method: 'POST',
          headers: { authorization: auth, 'content-type': 'application/json' },
          body: JSON.stringify({ query }),
        });
        return ((await res.json()) as { data: T }).data;
      };
      const { me } = await ask<{ me: { id: string } }>('{ me { id } }');
      const { createTeam } = await ask<{ createTeam: { id: string } }>(
        `mutation { createTeam(input: { name: "${name}" }) { id } }`,
      );
      const owner = {
        auth,
        id: me.id,
        rows,
        job: md5uuid(me.id + 1),
        model: md5uuid(me.id + 0),
        page20: '',
        team: createTeam.id,
        batch: md5uuid(`${me.id}b${Math.ceil(rows / 10_000) - 1}`),
      };
      await seed(db, base, owner, kinds);
      owners.push(owner);
    }
    for (const table of [
      'media_assets',
      'media_tags',
      'deployments',
      'jobs',
      'batches',
      'models',
      'api_keys',
      'webhook_deliveries',
      'team_audit',
    ])
      await db.query(`vacuum analyze ${table}`);
    console.log(
      `seeded ${SMALL} and ${LARGE} rows of each kind in ${((Date.now() - seeding) / 1000).toFixed(0)} s`,
    );
    if (kinds.has('media'))
      for (const o of owners) o.page20 = await pagesDown(base, o.auth, '/api/v1/media?limit=50', 20);

    const rows: Record<string, string | number>[] = [];
    for (const shape of shapes) {
      const [small, large] = owners;
      for (const o of owners) await send(base, o.auth, shape.request(o)); // warm-up: plans, caches
      const before = load();
      const a = await cannon(base, small.auth, shape.request(small));
      const b = await cannon(base, large.auth, shape.request(large));
      rows.push({
        request: shape.name,
        [`p50 ms ${SMALL}`]: a.p50,
        [`p99 ms ${SMALL}`]: a.p99,
        [`req/s ${SMALL}`]: a.rps.toFixed(0),
        [`p50 ms ${LARGE}`]: b.p50,
        [`p99 ms ${LARGE}`]: b.p99,
        [`req/s ${LARGE}`]: b.rps.toFixed(0),
        ratio: (b.rps / a.rps).toFixed(2),
        load: ((before + load()) / 2).toFixed(2),
        [`plan at ${LARGE}`]: await plansOf(db, base, large.auth, shape.request(large)),
      });
    }
    printTable(`Lists at ${SMALL} and ${LARGE} rows of one owner`, rows);
  } finally {
    await db.end();
    await sut.stop();
  }
}

function md5uuid(text: string): string {
  const hex = createHash('md5').update(text).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The path of the page `n` pages down a list, following its `Link` (or the last one there is). */
async function pagesDown(base: string, auth: string, path: string, n: number): Promise<string> {
  let at = path;
  for (let i = 0; i < n; i++) {
    const res = await fetch(base + at, { headers: { authorization: auth } });
    const next = /<([^>]+)>; rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
    if (!next) break;
    at = next.startsWith('http') ? new URL(next).pathname + new URL(next).search : next;
  }
  return at;
}
