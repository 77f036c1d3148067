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
 * Sends each request with its Idempotency-Key, and kills the service with SIGKILL once `made` (a
 * query) counts all they make: after their commits, before their answers were stored.
 */
async function crashWhileAnswering(
  requests: { url: string; body: unknown; key: string }[],
  made: string,
): Promise<void> {
  const port = await start();
  await db.query(HOLD_ANSWERS);
  try {
    // The process dies under them.
    const sent = requests.map((r) => post(port, r.url, r.body, r.key).catch(() => null));
    const count = async () => Number((await db.query(made)).rows[0].n);
    expect(await until(count, (n) => n >= requests.length, 30_000)).toBe(requests.length);
    const s = services.at(-1)!;
    s.child.kill('SIGKILL');
    await s.exited;
    await Promise.all(sent);
  } finally {
    await db.query('drop trigger test_hold_answer on idempotency_keys');
  }
}

it('a repeat after kill -9 between creating and storing the answer answers the deployment made, is CONFLICT for a token, and makes nothing twice', async () => {
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
  const deployment = {
    url: '/api/v1/deployments',
    body: { name: 'crash', model_id: model, args: {} },
    key: randomUUID(),
  };
  const token = { url: '/api/v1/tokens', body: { name: 'crash' }, key: randomUUID() };
  await crashWhileAnswering(
    [deployment, token],
    `select (select count(*) from deployments where name = 'crash') + (select count(*) from api_keys where name = 'crash') as n`,
  );
  const made = async () =>
    (
      await db.query(`select (select json_agg(json_build_object('id', d.id, 'jobs',
                               (select count(*) from jobs j where j.deployment_id = d.id)))
                              from deployments d where d.name = 'crash') as deployments,
                             (select json_agg(id) from api_keys where name = 'crash') as keys`)
    ).rows[0] as { deployments: { id: string; jobs: number }[]; keys: string[] };
  const before = await made();
  expect(before).toEqual({ deployments: [{ id: expect.any(String), jobs: 1 }], keys: [expect.any(String)] });

  // A restarted service: the repeat answers the deployment made before the crash, rebuilt from the
  // database; the token's value was in the answer only, so its repeat is CONFLICT naming the key.
  const port = await start();
  const [again, tokenAgain] = await Promise.all(
    [deployment, token].map((r) => post(port, r.url, r.body, r.key)),
  );
  expect(again.status).toBe(201);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  const answer = (await again.json()) as { id: string; model_id: string };
  expect(answer).toMatchObject({ id: before.deployments[0].id, model_id: model });
  expect({ status: tokenAgain.status, body: await tokenAgain.json() }).toEqual({
    status: 409,
    body: {
      error: {
        code: 'CONFLICT',
        message: expect.stringContaining(`created API key ${before.keys[0]}, but its answer`),
      },
    },
  });
  // Then the deployment's answer is stored and replayed as any; the token's repeat stays CONFLICT.
  const third = await post(port, deployment.url, deployment.body, deployment.key);
  expect({ status: third.status, replayed: third.headers.get('idempotent-replayed') }).toEqual({
    status: 201,
    replayed: 'true',
  });
  expect(await third.json()).toEqual(answer);
  expect((await post(port, token.url, token.body, token.key)).status).toBe(409);
  expect(await made()).toEqual(before);
});
