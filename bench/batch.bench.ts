/**
 * `npm run bench -- batch` (issue 30, docs/batches.md):
 * 1. creating a BENCH_BATCH_ITEMS-item batch over media by id: request to 201, p50 of
 *    BENCH_BATCH_ROUNDS, on an `api`-only service (nothing dispatches meanwhile), and the SQL
 *    statements per request (pg_stat_statements) next to those of a 10-item batch: constant;
 * 2. BENCH_BATCH_TRIVIAL trivial items (`true`) on the local executor, creation to `completed`,
 *    next to bare `xargs -P <concurrency>` running the same number of `true` processes, same run,
 *    and to the local executor alone running them (the floor the service's work adds to);
 * 3. the updates a subscriber of that batch's event stream receives per second.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { Client } from 'pg';
import { createLogger } from '../src/common/logger';
import { loadConfig } from '../src/config';
import { createExecutor } from '../src/executors/executor.factory';
import { load, median, now, printTable, setting, startService, tempDir } from './lib';

const ITEMS = setting('BENCH_BATCH_ITEMS', 10_000, 50);
const ROUNDS = setting('BENCH_BATCH_ROUNDS', 5, 2);
const TRIVIAL = setting('BENCH_BATCH_TRIVIAL', 1000, 20);
const CONCURRENCY = availableParallelism();

const fmt = (v: number) => v.toFixed(2);

async function call(url: string, auth: string, method: string, path: string, body?: unknown) {
  const res = await fetch(url + path, {
    method,
    headers: { authorization: auth, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as { id: string };
}

/** Part 1: batch creation over media ids, timed and its statements counted. */
async function creation(): Promise<Record<string, string | number>[]> {
  const sut = await startService(
    { ROLES: 'api', LOCAL_EXECUTOR_TRUST: 'any', BATCH_MAX_ITEMS: String(Math.max(ITEMS, 10)) },
    {
      preload: ['pg_stat_statements'],
    },
  );
  const db = new Client({ connectionString: sut.db.url });
  await db.connect();
  try {
    const url = sut.service.url;
    const auth = `Bearer ${await sut.token('bench')}`;
    const model = await call(url, auth, 'POST', '/api/v1/models', {
      name: 'thumbs',
      container: 'local',
      command: 'true {args}',
      args: { image: { type: 'file', format: ':value' } },
    });
    const [{ id: owner }] = (await db.query('select id from users limit 1')).rows;
    // The media rows as uploads leave them (their bytes are not needed to create a batch).
    const { rows } = await db.query<{ id: string }>(
      `insert into media_assets (id, owner_type, owner_id, type, status, image_name, extension, content_type, size,
                                 sha256, tags, created_at, updated_at)
       select gen_random_uuid(), 'user', $1, 'source_asset', 'live', 'p' || k || '.png', 'png', 'image/png', 68,
              md5(k::text), '{}', now(), now()
       from generate_series(1, $2::int) k returning id`,
      [owner, ITEMS],
    );
    const ids = rows.map((r) => r.id);
    await db.query('create extension if not exists pg_stat_statements');
    const create = async (n: number) => {
      await db.query('select pg_stat_statements_reset()');
      const start = now();
      await call(url, auth, 'POST', '/api/v1/batches', {
        name: `b${n}`,
        model_id: model.id,
        inputs: { arg: 'image', media_ids: ids.slice(0, n) },
      });
      const ms = now() - start;
      const { rows: s } = await db.query<{ calls: string }>(
        `select coalesce(sum(calls), 0) as calls from pg_stat_statements where query not like '%pg_stat_statements%'`,
      );
      return { ms, statements: Number(s[0].calls) };
    };
    await create(10); // warm-up
    const small = await create(10);
    const times: number[] = [];
    let statements = 0;
    const loads: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const run = await create(ITEMS);
      times.push(run.ms);
      statements = Math.max(statements, run.statements);
      loads.push(load());
    }
    return [
      {
        measure: `create a ${ITEMS}-item batch (media_ids), request to 201, p50 of ${ROUNDS}`,
        value: `${fmt(median(times) / 1000)} s`,
        target: '<= 2 s',
        statements: `${statements} (10 items: ${small.statements})`,
        'load avg': fmt(median(loads)),
      },
    ];
  } finally {
    await db.end();
    await sut.stop();
  }
}

/** Bare floor: `xargs -P <concurrency>` starting `n` `true` processes. */
async function bareXargs(n: number): Promise<number> {
  const start = now();
  await new Promise<void>((resolve, reject) => {
    const child = spawn('sh', ['-c', `seq ${n} | xargs -P ${CONCURRENCY} -I{} true`], { stdio: 'ignore' });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`xargs exited ${code}`))));
  });
  return now() - start;
}

/**
 * The local executor alone, no service or database: the same `n` processes through its launcher,
 * as the service's configuration starts them (its default limits), `CONCURRENCY` at a time. What
 * a job costs before any of the service's work.
 */
async function executorAlone(n: number): Promise<number> {
  const dir = await tempDir('bench-exec-');
  const executor = createExecutor(
    loadConfig({ DATA_DIR: dir, LOCAL_EXECUTOR_CONCURRENCY: String(CONCURRENCY) }),
    createLogger('warn'),
  );
  const run = (count: number) =>
    Promise.all(
      Array.from(
        { length: count },
        () =>
          new Promise<void>((resolve, reject) => {
            const observer = { pending() {}, running() {}, line() {}, ended: () => resolve() };
            const spec = {
              jobId: randomUUID(),
              owner: { type: 'user' as const, id: randomUUID() },
              argv: ['true'],
              env: {},
              container: 'local',
              machineType: 'cpu',
              machineCount: 1,
              timeoutSeconds: 60,
              inputs: [],
              workDir: dir,
              outputDir: dir,
            };
            executor.submit(spec, observer).catch(reject);
          }),
      ),
    );
  try {
    await run(20);
    const start = now();
    await run(n);
    return now() - start;
  } finally {
    await executor.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Parts 2 and 3: trivial items to `completed`, and the updates of the batch's event stream. */
async function trivial(): Promise<Record<string, string | number>[]> {
  const sut = await startService({
    ROLES: 'api,worker',
    LOCAL_EXECUTOR_TRUST: 'any',
    LOCAL_EXECUTOR_CONCURRENCY: String(CONCURRENCY),
  });
  try {
    const url = sut.service.url;
    const auth = `Bearer ${await sut.token('bench')}`;
    const model = await call(url, auth, 'POST', '/api/v1/models', {
      name: 'trivial',
      container: 'local',
      command: 'true {args}',
      args: {},
    });
    const run = async (n: number) => {
      const start = now();
      const batch = await call(url, auth, 'POST', '/api/v1/batches', {
        name: 'trivial',
        model_id: model.id,
        inputs: { items: Array.from({ length: n }, () => ({})) },
      });
      // The event stream says when it completed, and how many updates it sent meanwhile.
      const res = await fetch(`${url}/api/v1/batches/${batch.id}/events`, {
        headers: { authorization: auth },
      });
      const subscribed = now();
      const text = await res.text();
      const ms = now() - start;
      const updates = (text.match(/^event: /gm) ?? []).length;
      if (!text.includes('event: completed')) throw new Error(`no completed event: ${text.slice(-300)}`);
      return { ms, updates, perSecond: updates / ((now() - subscribed) / 1000) };
    };
    await run(Math.min(20, TRIVIAL)); // warm-up
    const loadBefore = load();
    const batch = await run(TRIVIAL);
    const bare = await bareXargs(TRIVIAL);
    const alone = await executorAlone(TRIVIAL);
    const loadAfter = load();
    return [
      {
        measure: `${TRIVIAL} trivial items (\`true\`), local executor, creation to completed`,
        value: `${fmt(batch.ms / 1000)} s`,
        target: `<= 1.5x bare xargs -P ${CONCURRENCY} (${fmt(bare / 1000)} s): ${fmt(batch.ms / bare)}x`,
        statements: '',
        'load avg': `${fmt(loadBefore)} -> ${fmt(loadAfter)}`,
      },
      {
        measure: `the same ${TRIVIAL} processes through the local executor alone (no service, no database)`,
        value: `${fmt(alone / 1000)} s`,
        target: `(floor) ${fmt(alone / bare)}x bare xargs; the service adds ${fmt(batch.ms / alone)}x`,
        statements: '',
        'load avg': fmt(loadAfter),
      },
      {
        measure: `batch progress with ${TRIVIAL} jobs: updates per second to an event-stream subscriber`,
        value: `${fmt(batch.perSecond)} /s (${batch.updates} updates)`,
        target: '<= 5 /s',
        statements: '',
        'load avg': fmt(loadAfter),
      },
    ];
  } finally {
    await sut.stop();
  }
}

export async function run(): Promise<void> {
  const rows = [...(await creation()), ...(await trivial())];
  printTable(`Batches (${CONCURRENCY} cores)`, rows);
}
