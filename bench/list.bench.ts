/**
 * `npm run bench -- list`: the service's read path beside its floor and its peer, in one run
 * against one embedded PostgreSQL.
 *
 * One owner holds BENCH_ROWS media (a few uploaded through the real upload path, the rest copied
 * from them in SQL) and BENCH_ROWS jobs (one real `createDeployment` per model, the rest copied).
 * Two shapes are asked for:
 * - the owner's 50 newest media, four ways: a bare node:http + pg handler running the service's
 *   SQL; `GET /api/v1/media?limit=50`; `POST /graphql` with the REST route's own document; and
 *   PostGraphile v4 with its production options, answering the same fields;
 * - 50 jobs, each with its model and deployment: bare (one joined statement), `POST /graphql`,
 *   PostGraphile.
 * The REST and GraphQL lists are served again by a process of the same build with a request limit
 * no request reaches (BENCH_RATE_LIMIT, 0 for none): what `npm start`'s default limit costs.
 * Every target is checked to answer the same rows first. Then BENCH_ROUNDS interleaved rounds
 * (the order rotates each round) of BENCH_SECONDS under autocannon with 10 connections; the
 * tables print medians of the rounds, the ratio to the bare handler, and the one-minute load
 * average while each target ran. SQL statements per request are counted by pg_stat_statements.
 */
import autocannon from 'autocannon';
import { print } from 'graphql';
import { Client } from 'pg';
import { ListMediaDocument } from '../rest-compat/generated/graphql';
import {
  cpuMsOf,
  freePort,
  load,
  median,
  MiB,
  printTable,
  rssOf,
  setting,
  SMOKE,
  startChild,
  startService,
  upload,
  type Child,
} from './lib';

const ROWS = setting('BENCH_ROWS', 10_000, 200);
const ROUNDS = setting('BENCH_ROUNDS', 3, 1);
const DURATION = setting('BENCH_SECONDS', 10, 1);
const CONNECTIONS = setting('BENCH_CONNECTIONS', 10, 2);
const UPLOADS = 20;
const MODELS = 5;

interface Target {
  name: string;
  /** The process serving it (RSS is sampled while it runs). */
  child: Child;
  request: { path: string; method?: 'GET' | 'POST'; body?: string; headers?: Record<string, string> };
  /** The ids of the answered rows, in order: every target must answer the same ones. */
  ids(body: unknown): string[];
}

interface Run {
  rps: number;
  p50: number;
  p99: number;
  load: number;
  /** CPU time the serving process used per request: what the load average cannot blur. */
  cpuMs: number;
}

async function cannon(t: Target, seconds: number): Promise<Run> {
  const before = load();
  const cpuBefore = cpuMsOf(t.child.process.pid!);
  const r = await autocannon({
    url: t.child.url + t.request.path,
    method: t.request.method ?? 'GET',
    body: t.request.body,
    headers: t.request.headers,
    connections: CONNECTIONS,
    duration: seconds,
  });
  if (r.non2xx || r.errors) throw new Error(`${t.name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    load: (before + load()) / 2,
    cpuMs: (cpuMsOf(t.child.process.pid!) - cpuBefore) / r.requests.total,
  };
}

async function fetchBody(t: Target): Promise<unknown> {
  const res = await fetch(t.child.url + t.request.path, {
    method: t.request.method ?? 'GET',
    body: t.request.body,
    headers: t.request.headers,
  });
  const body = (await res.json()) as { errors?: unknown };
  if (!res.ok || body.errors) throw new Error(`${t.name} answered ${res.status}: ${JSON.stringify(body)}`);
  return body;
}

/** Statements the database ran per request, and their time, over `n` sequential requests. */
async function statementsPerRequest(
  db: Client,
  t: Target,
  n: number,
): Promise<{ count: number; ms: number }> {
  await db.query('select pg_stat_statements_reset()');
  for (let i = 0; i < n; i++) await fetchBody(t);
  const { rows } = await db.query<{ calls: string; ms: number }>(
    `select coalesce(sum(calls), 0) as calls, coalesce(sum(total_exec_time), 0) as ms
     from pg_stat_statements where query not like '%pg_stat_statements%'`,
  );
  return { count: Number(rows[0].calls) / n, ms: rows[0].ms / n };
}

/** Runs every target ROUNDS times, rotating the order each round; RSS peaks per process. */
async function interleaved(
  targets: Target[],
): Promise<{ runs: Map<Target, Run[]>; rss: Map<Child, number> }> {
  const runs = new Map<Target, Run[]>(targets.map((t) => [t, []]));
  const rss = new Map<Child, number>();
  for (const t of targets) await cannon(t, Math.min(2, DURATION)); // warm-up: JIT, caches, pools
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < targets.length; i++) {
      const t = targets[(i + round) % targets.length];
      const pid = t.child.process.pid!;
      let peak = rssOf(pid);
      const timer = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 50);
      runs.get(t)!.push(await cannon(t, DURATION));
      clearInterval(timer);
      rss.set(t.child, Math.max(rss.get(t.child) ?? 0, peak));
    }
  }
  return { runs, rss };
}

function table(
  title: string,
  targets: Target[],
  runs: Map<Target, Run[]>,
  statements: Map<Target, { count: number; ms: number }>,
): void {
  const base = median(runs.get(targets[0])?.map((r) => r.rps) ?? [NaN]);
  printTable(title, [
    ...targets
      .filter((t) => runs.has(t))
      .map((t) => {
        const rs = runs.get(t)!;
        const rps = median(rs.map((r) => r.rps));
        return {
          server: t.name,
          'req/s': rps.toFixed(0),
          'p50 ms': median(rs.map((r) => r.p50)),
          'p99 ms': median(rs.map((r) => r.p99)),
          ratio: (rps / base).toFixed(2),
          'CPU ms/req': median(rs.map((r) => r.cpuMs)).toFixed(2),
          'statements/req': statements.get(t)!.count.toFixed(1),
          'db ms/req': statements.get(t)!.ms.toFixed(2),
          load: median(rs.map((r) => r.load)).toFixed(2),
        };
      }),
  ]);
}

/** The owner's media: UPLOADS files through the real upload path, then copies up to ROWS in SQL. */
async function seedMedia(db: Client, url: string, auth: string, ownerId: string): Promise<void> {
  const uploads = Math.min(UPLOADS, ROWS);
  for (let i = 0; i < uploads; i++)
    await upload(`${url}/uploads/upload`, { authorization: auth }, 1024, `seed-${i}.png`);
  const copies = Math.floor(ROWS / uploads) - 1;
  await db.query(
    `insert into media_assets (id, owner_type, owner_id, type, status, image_name, extension, content_type,
                               size, sha256, tags, created_at, updated_at)
     select gen_random_uuid(), owner_type, owner_id, type, status, 'copy-' || i || '-' || image_name, extension,
            content_type, size, sha256, array['tag' || (i % 5), 'bench'], created_at - i * interval '1 second', updated_at
     from media_assets, generate_series(1, $2::int) i where owner_id = $1`,
    [ownerId, copies],
  );
}

/** MODELS models, one real deployment of each, then copies (deployment and job) up to ROWS jobs. */
async function seedJobs(db: Client, gql: (q: string, v?: object) => Promise<Record<string, { id: string }>>) {
  for (let i = 0; i < MODELS; i++) {
    const { createModel } = await gql(
      `mutation { createModel(input: { name: "model ${i}", container: "local", command: "true {args}", args: [] }) { id } }`,
    );
    await gql(
      'mutation ($m: ID!) { createDeployment(input: { name: "real", modelId: $m, args: {} }) { id } }',
      {
        m: createModel.id,
      },
    );
  }
  const copies = Math.floor(ROWS / MODELS) - 1;
  await db.query(
    `with src as (select d.*, j.executor, j.argv, j.container, j.machine_type, j.machine_count, j.timeout_seconds
                  from deployments d join jobs j on j.deployment_id = d.id),
     d as (insert into deployments (id, owner_type, owner_id, name, model_id, args, target_asset_id, created_at)
           select gen_random_uuid(), owner_type, owner_id, 'copy ' || i, model_id, args, gen_random_uuid(),
                  created_at - i * interval '1 second'
           from src, generate_series(1, $1::int) i
           returning id, owner_type, owner_id, model_id, created_at)
     insert into jobs (id, deployment_id, model_id, owner_type, owner_id, status, executor, argv, container,
                       machine_type, machine_count, timeout_seconds, created_at, updated_at)
     select gen_random_uuid(), d.id, d.model_id, d.owner_type, d.owner_id, 'succeeded', s.executor, s.argv,
            s.container, s.machine_type, s.machine_count, s.timeout_seconds, d.created_at, d.created_at
     from d join lateral (select * from src where src.model_id = d.model_id limit 1) s on true`,
    [copies],
  );
}

export async function run(): Promise<void> {
  const sut = await startService({ LOCAL_EXECUTOR_TRUST: 'any' }, { preload: ['pg_stat_statements'] });
  const children: Child[] = [];
  const db = new Client({ connectionString: sut.db.url });
  try {
    await db.connect();
    await db.query('create extension if not exists pg_stat_statements');
    const token = await sut.token('lister');
    const auth = `Bearer ${token}`;
    const gql = async (query: string, variables: object = {}) => {
      const res = await fetch(`${sut.service.url}/graphql`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/json' },
        body: JSON.stringify({ query, variables }),
      });
      const body = (await res.json()) as { data?: Record<string, { id: string }>; errors?: unknown };
      if (body.errors) throw new Error(JSON.stringify(body.errors));
      return body.data!;
    };
    await gql('{ me { id } }');
    const { rows } = await db.query<{ id: string }>(`select id from users where subject = 'lister'`);
    const ownerId = rows[0].id;
    await seedMedia(db, sut.service.url, auth, ownerId);
    await seedJobs(db, gql);
    await db.query('vacuum analyze');
    // PostGraphile builds relations from foreign keys; jobs.model_id has none (a model may be
    // deleted), so a smart comment declares the relation, as a PostGraphile user would.
    await db.query(`comment on table jobs is E'@foreignKey (model_id) references models (id)'`);

    const bare = await startChild(
      'bench/baselines/media-list.server.js',
      { DATABASE_URL: sut.db.url, OWNER_ID: ownerId, CDN_URL: sut.service.url },
      await freePort(),
    );
    children.push(bare);
    const peer = await startChild(
      'bench/baselines/postgraphile.server.js',
      { DATABASE_URL: sut.db.url, NODE_ENV: 'production' },
      await freePort(),
    );
    children.push(peer);
    // BENCH_BEFORE (or its old name BENCH_REST_BEFORE): the `dist` of an earlier build, served
    // beside this one on the same database and data (its tokens and URLs the same), so that its
    // REST and GraphQL lists are compared with this build's in one run.
    const beforeDist = process.env.BENCH_BEFORE ?? process.env.BENCH_REST_BEFORE;
    const before = beforeDist
      ? await startChild(
          'src/main.js',
          { ...sut.env, PUBLIC_URL: sut.service.url },
          await freePort(),
          beforeDist,
        )
      : undefined;
    if (before) children.push(before);
    // BENCH_RATE_LIMIT (default 1000000 a minute, 0 for none): the same build, and the earlier one,
    // served again with a request limit no request reaches, so that the cost of the limits that
    // `npm start` turns on (RATE_LIMIT_PER_MINUTE) is printed beside the figures without them.
    const rateLimit = String(setting('BENCH_RATE_LIMIT', 1_000_000, 1_000_000));
    const limitedEnv = { ...sut.env, PUBLIC_URL: sut.service.url, RATE_LIMIT_PER_MINUTE: rateLimit };
    const limited =
      rateLimit === '0'
        ? []
        : [
            { label: '', child: await startChild('src/main.js', limitedEnv, await freePort()) },
            ...(beforeDist
              ? [
                  {
                    label: `build of ${beforeDist}, `,
                    child: await startChild('src/main.js', limitedEnv, await freePort(), beforeDist),
                  },
                ]
              : []),
          ];
    children.push(...limited.map((l) => l.child));

    const json = { 'content-type': 'application/json' };
    const post = (query: string, variables: object = {}) => ({
      path: '/graphql',
      method: 'POST' as const,
      body: JSON.stringify({ query, variables }),
    });
    type Nodes = { nodes: { id: string }[] };
    const mediaTargets: Target[] = [
      {
        name: 'bare node:http + pg',
        child: bare,
        request: { path: '/api/v1/media' },
        ids: (b) => (b as { media: { id: string }[] }).media.map((m) => m.id),
      },
      {
        name: 'GET /api/v1/media?limit=50',
        child: sut.service,
        request: { path: '/api/v1/media?limit=50', headers: { authorization: auth } },
        ids: (b) => (b as { media: { id: string }[] }).media.map((m) => m.id),
      },
      {
        name: 'POST /graphql (ListMedia)',
        child: sut.service,
        request: {
          ...post(print(ListMediaDocument), { first: 50 }),
          headers: { ...json, authorization: auth },
        },
        ids: (b) => (b as { data: { media: Nodes } }).data.media.nodes.map((n) => n.id),
      },
      // The same two paths served by the earlier build (BENCH_BEFORE), for an A/B in one run.
      ...(before
        ? [
            {
              name: `GET /api/v1/media?limit=50, build of ${beforeDist}`,
              child: before,
              request: { path: '/api/v1/media?limit=50', headers: { authorization: auth } },
              ids: (b: unknown) => (b as { media: { id: string }[] }).media.map((m) => m.id),
            },
            {
              name: `POST /graphql (ListMedia), build of ${beforeDist}`,
              child: before,
              request: {
                ...post(print(ListMediaDocument), { first: 50 }),
                headers: { ...json, authorization: auth },
              },
              ids: (b: unknown) => (b as { data: { media: Nodes } }).data.media.nodes.map((n) => n.id),
            },
          ]
        : []),
      ...limited.flatMap(({ label, child }) => [
        {
          name: `GET /api/v1/media?limit=50, ${label}rate limit ${rateLimit}/min`,
          child,
          request: { path: '/api/v1/media?limit=50', headers: { authorization: auth } },
          ids: (b: unknown) => (b as { media: { id: string }[] }).media.map((m) => m.id),
        },
        {
          name: `POST /graphql (ListMedia), ${label}rate limit ${rateLimit}/min`,
          child,
          request: {
            ...post(print(ListMediaDocument), { first: 50 }),
            headers: { ...json, authorization: auth },
          },
          ids: (b: unknown) => (b as { data: { media: Nodes } }).data.media.nodes.map((n) => n.id),
        },
      ]),
      {
        name: 'PostGraphile v4',
        child: peer,
        request: {
          ...post(
            `query ($owner: UUID!) { allMediaAssets(condition: { ownerType: "user", ownerId: $owner, status: "live" },
               orderBy: [CREATED_AT_DESC, ID_DESC], first: 50) {
               nodes { id imageName extension status type tags createdAt } pageInfo { hasNextPage endCursor } } }`,
            { owner: ownerId },
          ),
          headers: json,
        },
        ids: (b) => (b as { data: { allMediaAssets: Nodes } }).data.allMediaAssets.nodes.map((n) => n.id),
      },
    ];
    const jobTargets: Target[] = [
      {
        name: 'bare node:http + pg (one join)',
        child: bare,
        request: { path: '/jobs' },
        ids: (b) => (b as { data: { jobs: Nodes } }).data.jobs.nodes.map((n) => n.id),
      },
      {
        name: 'POST /graphql',
        child: sut.service,
        request: {
          ...post(
            `query { jobs(first: 50) { nodes { id status createdAt model { id name version container }
               deployment { id name createdAt } } pageInfo { hasNextPage } } }`,
          ),
          headers: { ...json, authorization: auth },
        },
        ids: (b) => (b as { data: { jobs: Nodes } }).data.jobs.nodes.map((n) => n.id),
      },
      {
        name: 'PostGraphile v4',
        child: peer,
        request: {
          ...post(
            `query ($owner: UUID!) { allJobs(condition: { ownerType: "user", ownerId: $owner },
               orderBy: [CREATED_AT_DESC, ID_DESC], first: 50) {
               nodes { id status createdAt modelByModelId { id name version container }
                       deploymentByDeploymentId { id name createdAt } } pageInfo { hasNextPage } } }`,
            { owner: ownerId },
          ),
          headers: json,
        },
        ids: (b) => (b as { data: { allJobs: Nodes } }).data.allJobs.nodes.map((n) => n.id),
      },
    ];

    const statements = new Map<Target, { count: number; ms: number }>();
    for (const targets of [mediaTargets, jobTargets]) {
      const expected = targets[0].ids(await fetchBody(targets[0]));
      if (expected.length !== 50) throw new Error(`the baseline answered ${expected.length} rows, not 50`);
      for (const t of targets) {
        const got = t.ids(await fetchBody(t));
        if (got.join() !== expected.join()) throw new Error(`${t.name} does not answer the same 50 rows`);
        statements.set(t, await statementsPerRequest(db, t, SMOKE ? 2 : 20));
      }
    }

    // BENCH_ONLY (a pattern of target names) runs a few targets alone, say under BENCH_NODE_ARGS=--cpu-prof.
    const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : null;
    const all = [...mediaTargets, ...jobTargets].filter((t) => !only || only.test(t.name));
    const loadBefore = load();
    const { runs, rss } = await interleaved(all);
    console.log(
      `\n${ROWS} rows of one owner; ${CONNECTIONS} connections; ${ROUNDS} interleaved rounds of ${DURATION} s; ` +
        `medians of the rounds; load average (1 min) ${loadBefore.toFixed(2)} at the start, ${load().toFixed(2)} at the end`,
    );
    table('List of 50 media', mediaTargets, runs, statements);
    table('50 jobs, each with its model and deployment', jobTargets, runs, statements);
    printTable('Peak RSS under this load', [
      { process: 'bare node:http + pg', 'RSS MiB': ((rss.get(bare) ?? NaN) / MiB).toFixed(0) },
      {
        process: 'the service (REST and GraphQL)',
        'RSS MiB': ((rss.get(sut.service) ?? NaN) / MiB).toFixed(0),
      },
      { process: 'PostGraphile v4', 'RSS MiB': ((rss.get(peer) ?? NaN) / MiB).toFixed(0) },
      ...limited.map(({ label, child }) => ({
        process: `the service, ${label}rate limit ${rateLimit}/min`,
        'RSS MiB': ((rss.get(child) ?? NaN) / MiB).toFixed(0),
      })),
      ...(before
        ? [
            {
              process: `the service, build of ${beforeDist}`,
              'RSS MiB': ((rss.get(before) ?? NaN) / MiB).toFixed(0),
            },
          ]
        : []),
    ]);
    if (SMOKE) console.log('\n(smoke mode: tiny sizes, figures not meaningful)');
  } finally {
    await db.end().catch(() => undefined);
    for (const c of children) await c.stop();
    await sut.stop();
  }
}
