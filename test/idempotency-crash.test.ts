import { randomUUID } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { createTestDatabase } from './helpers/db';
import { until } from './helpers/media';
import { TestIssuer } from './helpers/oidc-issuer';
import { spawnService, type Spawned } from './helpers/process';

/**
 * `Idempotency-Key` across kill -9 of the service between making the thing and storing the answer
 * (docs/faults.md, "A process dies while it creates something"). A trigger of the test holds the
 * statement that stores the answer (and then fails it), so the kill surely lands in that gap;
 * nothing in the service knows of the test.
 */

jest.setTimeout(240_000);

let issuer: TestIssuer;
let dataDir: string;
let env: Record<string, string>;
let db: Client;
let auth: string;
const services: Spawned[] = [];

beforeAll(async () => {
  issuer = await TestIssuer.start();
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'media-idempotency-crash-'));
  await chmod(dataDir, 0o755);
  env = {
    DATABASE_URL: await createTestDatabase(),
    OIDC_ISSUER: issuer.issuer,
    DATA_DIR: dataDir,
    LOCAL_EXECUTOR_TRUST: 'any',
    ROLES: 'api',
  };
  db = new Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  auth = `Bearer ${await issuer.token('carol')}`;
});

afterAll(async () => {
  for (const s of services) if (s.child.exitCode === null) s.child.kill('SIGKILL');
  await db?.end();
  await issuer?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

async function start(): Promise<number> {
  const s = await spawnService(env);
  services.push(s);
  return s.port;
}

function post(port: number, url: string, body: unknown, key: string) {
  return fetch(`http://127.0.0.1:${port}${url}`, {
    method: 'POST',
    headers: { authorization: auth, 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(body),
  });
}

/** Until the statement that stores an answer is running (held by the trigger below). */
const HOLD_ANSWERS = `
  create or replace function test_hold_answer() returns trigger language plpgsql as $$
  begin
    perform pg_sleep(3);
    raise exception 'test: this answer is never stored';
  end $$;
  create trigger test_hold_answer before update on idempotency_keys
    for each row when (new.status = 'done') execute function test_hold_answer();`;

/**
 * Sends `body` to `url` with `key`, and kills the service with SIGKILL once `made` (a query)
 * finds what the request made: after its commit, before its answer was stored.
 */
async function crashWhileAnswering(url: string, body: unknown, key: string, made: string): Promise<void> {
  const port = await start();
  await db.query(HOLD_ANSWERS);
  try {
    const first = post(port, url, body, key).catch(() => null); // the process dies under it
    expect(
      await until(
        async () => (await db.query(made)).rowCount,
        (n) => n! > 0,
        30_000,
      ),
    ).toBe(1);
    const s = services.at(-1)!;
    s.child.kill('SIGKILL');
    await s.exited;
    await first;
  } finally {
    await db.query('drop trigger test_hold_answer on idempotency_keys');
  }
}

it('a repeat after kill -9 between creating a deployment and storing the answer answers that deployment, and makes no second one', async () => {
  const model = await (async () => {
    const port = await start();
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/models`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'once', container: 'local', command: 'node -e 1 {args}', args: {} }),
    });
    expect(res.status).toBe(201);
    services.at(-1)!.child.kill('SIGKILL');
    await services.at(-1)!.exited;
    return ((await res.json()) as { id: string }).id;
  })();
  const key = randomUUID();
  const body = { name: 'crash', model_id: model, args: {} };
  await crashWhileAnswering(
    '/api/v1/deployments',
    body,
    key,
    `select 1 from deployments where name = 'crash'`,
  );
  const made =
    await db.query(`select d.id, count(j.id)::int as jobs from deployments d join jobs j on j.deployment_id = d.id
                               where d.name = 'crash' group by d.id`);
  expect(made.rows).toEqual([{ id: expect.any(String), jobs: 1 }]);
  const [{ id }] = made.rows;

  // A restarted service: the repeat answers the deployment made before the crash.
  const port = await start();
  const again = await post(port, '/api/v1/deployments', body, key);
  expect(again.status).toBe(201);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  const answer = (await again.json()) as { id: string; model_id: string };
  expect(answer).toMatchObject({ id, model_id: model });
  // Then that answer is stored, and replayed as any.
  const third = await post(port, '/api/v1/deployments', body, key);
  expect({ status: third.status, replayed: third.headers.get('idempotent-replayed') }).toEqual({
    status: 201,
    replayed: 'true',
  });
  expect(await third.json()).toEqual(answer);
  const after = await db.query(
    `select count(distinct d.id)::int as deployments, count(j.id)::int as jobs
     from deployments d join jobs j on j.deployment_id = d.id where d.name = 'crash'`,
  );
  expect(after.rows).toEqual([{ deployments: 1, jobs: 1 }]);
});
