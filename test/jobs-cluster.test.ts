import { createClient } from 'graphql-ws';
import { mkdtemp, rm, chmod } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { WorkerInstance } from '../src/jobs/job.entity';
import { startTestApp, type TestApp } from './helpers/app';
import { createTestDatabase } from './helpers/db';
import { TestIssuer } from './helpers/oidc-issuer';
import { alive, restApi as api } from './helpers/jobs';
import { until } from './helpers/media';
import { spawnService, type Spawned } from './helpers/process';

jest.setTimeout(120_000);

describe('two service instances on one database', () => {
  let issuer: TestIssuer;
  let apiOnly: TestApp;
  let worker: TestApp;

  beforeAll(async () => {
    issuer = await TestIssuer.start();
    const databaseUrl = await createTestDatabase();
    const env = { LOCAL_EXECUTOR_TRUST: 'any' };
    apiOnly = await startTestApp({ ...env, ROLES: 'api' }, { databaseUrl, issuer });
    worker = await startTestApp({ ...env, ROLES: 'api,worker' }, { databaseUrl, issuer });
  });
  afterAll(async () => {
    await apiOnly.close();
    await worker.close();
    await issuer.stop();
  });

  it('deliver events of a job run by one instance to subscribers of the other', async () => {
    const auth = `Bearer ${await issuer.token('carol')}`;
    const client = createClient({
      url: `ws://127.0.0.1:${apiOnly.port}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: auth },
      retryAttempts: 0,
    });
    try {
      const seen: { id: string; status: string }[] = [];
      const finished = new Promise<void>((resolve, reject) => {
        client.subscribe<{ jobs: { id: string; status: string } }>(
          { query: 'subscription { jobs { id status } }' },
          {
            next: (v) => {
              seen.push(v.data!.jobs);
              if (v.data!.jobs.status === 'SUCCEEDED') resolve();
            },
            error: reject,
            complete: () => undefined,
          },
        );
      });
      await new Promise((r) => setTimeout(r, 200));
      // Created through the instance without a worker; only the other one can run it.
      const jobId = await api(apiOnly.port, auth).run('argv');
      await finished;
      expect(seen.filter((e) => e.id === jobId).map((e) => e.status)).toEqual([
        'QUEUED',
        'STARTING',
        'RUNNING',
        'SUCCEEDED',
      ]);
      const workers = await apiOnly.runtime.orm.em.fork().find(WorkerInstance, {});
      expect(workers.map((w) => w.id)).toEqual([worker.runtime.runner!.instanceId]);
      expect(apiOnly.runtime.runner).toBeNull();
    } finally {
      await client.dispose();
    }
  });

  it('cancel a job through the instance that does not run it', async () => {
    const auth = `Bearer ${await issuer.token('carol')}`;
    const jobId = await api(apiOnly.port, auth).run('idle');
    const running = await until(
      () => api(apiOnly.port, auth).job(jobId),
      (j) => j.status === 'running',
      60000,
    );
    expect(running.status).toBe('running');
    const pid = Number(running.external_id);
    expect(alive(pid)).toBe(true);
    const canceled = await api(apiOnly.port, auth).call('POST', `/api/v1/jobs/${jobId}/cancel`);
    expect(canceled.body.status).toBe('canceled');
    expect(
      await until(
        async () => alive(pid),
        (a) => !a,
      ),
    ).toBe(false);
  });
});

describe('a worker process that dies', () => {
  let issuer: TestIssuer;
  let dataDir: string;
  let env: Record<string, string>;
  const services: Spawned[] = [];

  beforeAll(async () => {
    issuer = await TestIssuer.start();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'media-crash-'));
    await chmod(dataDir, 0o755);
    env = {
      DATABASE_URL: await createTestDatabase(),
      OIDC_ISSUER: issuer.issuer,
      DATA_DIR: dataDir,
      LOCAL_EXECUTOR_TRUST: 'any',
      ROLES: 'api,worker',
    };
  });
  // A test that failed half-way leaves no worker behind to take the next test's jobs.
  afterEach(async () => {
    for (const s of services.splice(0))
      if (s.child.exitCode === null) {
        s.child.kill('SIGTERM');
        await s.exited;
      }
  });
  afterAll(async () => {
    await issuer.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('has its in-flight jobs failed and their processes stopped when it starts again; nothing runs twice', async () => {
    const auth = `Bearer ${await issuer.token('dave')}`;
    const first = await spawnService(env);
    services.push(first);
    const jobId = await api(first.port, auth).run('idle');
    const running = await until(
      () => api(first.port, auth).job(jobId),
      (j) => j.status === 'running',
      60000,
    );
    expect(running.status).toBe('running');
    const pid = Number(running.external_id);

    first.child.kill('SIGKILL');
    await first.exited;
    // The job's process outlives the service that started it...
    expect(alive(pid)).toBe(true);

    const second = await spawnService(env);
    services.push(second);
    // ...until the next start reconciles it.
    const job = await until(
      () => api(second.port, auth).job(jobId),
      (j) => j.status === 'failed',
      30000,
    );
    expect(job.status).toBe('failed');
    expect(job.error).toMatch(/worker running this job stopped.*leftover processes were stopped/);
    expect(
      await until(
        async () => alive(pid),
        (a) => !a,
      ),
    ).toBe(false);

    // Still failed a moment later, and it ran only once.
    await new Promise((r) => setTimeout(r, 1000));
    const gql = await api(second.port, auth).call('POST', '/graphql', {
      query: 'query ($id: ID!) { job(id: $id) { status transitions { to } } }',
      variables: { id: jobId },
    });
    const data = (gql.body.data as { job: { status: string; transitions: { to: string }[] } }).job;
    expect(data.status).toBe('FAILED');
    expect(data.transitions.map((x) => x.to)).toEqual(['QUEUED', 'STARTING', 'RUNNING', 'FAILED']);

    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('on a graceful shutdown fails its running jobs, stops their processes, and leaves queued ones queued', async () => {
    const auth = `Bearer ${await issuer.token('dave')}`;
    const oneSlot = { ...env, LOCAL_EXECUTOR_CONCURRENCY: '1' };
    const svc = await spawnService(oneSlot);
    services.push(svc);
    const running = await api(svc.port, auth).run('idle');
    const started = await until(
      () => api(svc.port, auth).job(running),
      (j) => j.status === 'running',
      60000,
    );
    expect(started.status).toBe('running');
    const waiting = await api(svc.port, auth).run('idle'); // the only slot is taken
    expect((await api(svc.port, auth).job(waiting)).status).toBe('queued');
    const pid = Number(started.external_id);
    svc.child.kill('SIGTERM');
    expect(await svc.exited).toBe(0);
    expect(alive(pid)).toBe(false);

    const next = await spawnService(oneSlot);
    services.push(next);
    expect(await api(next.port, auth).job(running)).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/worker shut down/),
    });
    // The queued job was not started and failed: it runs now.
    const resumed = await until(
      () => api(next.port, auth).job(waiting),
      (j) => j.status === 'running',
      30000,
    );
    expect(resumed.status).toBe('running');
    await api(next.port, auth).call('POST', `/api/v1/jobs/${waiting}/cancel`);
    next.child.kill('SIGTERM');
    expect(await next.exited).toBe(0);
  });
});
