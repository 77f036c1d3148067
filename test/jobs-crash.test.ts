import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { createTestDatabase } from './helpers/db';
import { PROGRAM } from './helpers/jobs';
import { until } from './helpers/media';
import { TestIssuer } from './helpers/oidc-issuer';
import { spawnService, type Spawned } from './helpers/process';

jest.setTimeout(240_000);

/**
 * A worker process killed with SIGKILL while one job runs and a second waits `queued` (its
 * dispatch task taken by the dead worker, which waits for a slot): the queued job still runs,
 * once, on a restart or on a worker that survives.
 */
describe('a queued job after kill -9 of its worker', () => {
  let issuer: TestIssuer;
  let dataDir: string;
  let env: Record<string, string>;
  let db: Client;
  const services: (Spawned & { port: number })[] = [];

  beforeAll(async () => {
    issuer = await TestIssuer.start();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'media-jobs-crash-'));
    await chmod(dataDir, 0o755);
  });
  beforeEach(async () => {
    const databaseUrl = await createTestDatabase();
    db = new Client({ connectionString: databaseUrl });
    await db.connect();
    env = {
      DATABASE_URL: databaseUrl,
      OIDC_ISSUER: issuer.issuer,
      DATA_DIR: dataDir,
      LOCAL_EXECUTOR_TRUST: 'any',
      ROLES: 'api,worker',
      LOCAL_EXECUTOR_CONCURRENCY: '1',
      WORKER_CONCURRENCY: '1',
    };
  });
  afterEach(async () => {
    for (const s of services.splice(0)) if (s.child.exitCode === null) s.child.kill('SIGKILL');
    await db.end();
  });
  afterAll(async () => {
    await issuer.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  async function start(): Promise<Spawned & { port: number }> {
    const s = await spawnService(env);
    services.push(s);
    return s;
  }

  async function kill(s: Spawned): Promise<void> {
    s.child.kill('SIGKILL');
    await s.exited;
  }

  async function stop(s: Spawned): Promise<void> {
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  }

  function api(port: number, auth: string) {
    return async (method: string, url: string, body?: unknown) => {
      const res = await fetch(`http://127.0.0.1:${port}${url}`, {
        method,
        headers: { authorization: auth, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
  }

  const job = async (id: string) =>
    (
      await db.query<{ status: string; worker_id: string | null }>(
        'select status, worker_id from jobs where id = $1',
        [id],
      )
    ).rows[0];

  /** Through `port`: one job running and a second queued, its dispatch task taken by that worker. */
  async function runningAndQueued(port: number): Promise<{ running: string; queued: string }> {
    const call = api(port, `Bearer ${await issuer.token('crash')}`);
    const model = await call('POST', '/api/v1/models', {
      name: 'idle',
      container: 'local',
      command: `node "${PROGRAM}" idle {args}`,
      args: {},
      max_retries: 0,
    });
    expect(model.status).toBe(201);
    const ids: string[] = [];
    for (const name of ['first', 'second']) {
      const created = await call('POST', '/api/v1/deployments', { name, model_id: model.body.id, args: {} });
      expect(created.status).toBe(201);
      ids.push(
        ((await call('GET', `/api/v1/deployments/${created.body.id as string}`)).body.job as { id: string })
          .id,
      );
      if (name === 'first')
        expect(
          (
            await until(
              () => job(ids[0]),
              (j) => j.status === 'running',
              30_000,
            )
          ).status,
        ).toBe('running');
    }
    // The second job's dispatch task is locked by the worker, which waits for its only slot.
    const locked = await until(
      async () =>
        (
          await db.query(
            `select locked_by from graphile_worker._private_jobs where payload->>'jobId' = $1 and locked_by is not null`,
            [ids[1]],
          )
        ).rowCount,
      (n) => n === 1,
      30_000,
    );
    expect(locked).toBe(1);
    expect((await job(ids[1])).status).toBe('queued');
    return { running: ids[0], queued: ids[1] };
  }

  /** The job's moves out of `queued`: exactly one means it was dispatched once. */
  const starts = async (id: string) =>
    (await db.query(`select 1 from job_transitions where job_id = $1 and to_status = 'starting'`, [id]))
      .rowCount;

  it('runs once after a restart of the killed worker', async () => {
    const first = await start();
    const { running, queued } = await runningAndQueued(first.port);
    await kill(first);

    const second = await start();
    expect(
      (
        await until(
          () => job(running),
          (j) => j.status === 'failed',
          30_000,
        )
      ).status,
    ).toBe('failed');
    const ran = await until(
      () => job(queued),
      (j) => j.status === 'running',
      30_000,
    );
    expect(ran.status).toBe('running');
    expect(await starts(queued)).toBe(1);
    await stop(second);
  });

  it('runs once on the worker that survives when the other is killed', async () => {
    const doomed = await start();
    const { running, queued } = await runningAndQueued(doomed.port);
    // Started once the queued job's task is taken: only the doomed worker could have had it.
    const survivor = await start();
    const survivorId = (
      await db.query<{ id: string }>('select id from worker_instances where pid = $1', [survivor.child.pid])
    ).rows[0].id;
    await kill(doomed);

    const ran = await until(
      () => job(queued),
      (j) => j.status === 'running',
      30_000,
    );
    expect(ran).toEqual({ status: 'running', worker_id: survivorId });
    expect((await job(running)).status).toBe('failed');
    expect(await starts(queued)).toBe(1);
    await stop(survivor);
  });
});
