import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createClient } from 'graphql-ws';
import { Client } from 'pg';
import WebSocket from 'ws';
import { createTestDatabase } from '../test/helpers/db';
import { restApi as api } from '../test/helpers/jobs';
import { until } from '../test/helpers/media';
import { TestIssuer } from '../test/helpers/oidc-issuer';
import { spawnService, type Spawned } from '../test/helpers/process';
import { requireCluster, sharedDir, slurmJob, slurmJobsNamed } from './helpers';

jest.setTimeout(180_000);

let issuer: TestIssuer;
let env: Record<string, string>;
let shared: string;
const services: Spawned[] = [];

beforeAll(async () => {
  requireCluster();
  issuer = await TestIssuer.start();
  shared = sharedDir('media-slurm-takeover-');
  env = {
    DATABASE_URL: await createTestDatabase(),
    OIDC_ISSUER: issuer.issuer,
    DATA_DIR: path.join(shared, 'data'),
    EXECUTOR: 'slurm',
    SLURM_POLL_SECONDS: '1',
    LOCAL_EXECUTOR_TRUST: 'any',
    ROLES: 'api,worker',
  };
});
// A test's services never outlive it: another live worker would take the next test's jobs.
afterEach(async () => {
  for (const s of services.splice(0))
    if (s.child.exitCode === null) {
      s.child.kill('SIGKILL');
      await s.exited;
    }
});
afterAll(async () => {
  await issuer.stop();
  rmSync(shared, { recursive: true, force: true });
});

async function start(more: Record<string, string> = {}) {
  const service = await spawnService({ ...env, ...more });
  services.push(service);
  return service;
}

/** The job once its status is (or, with `not`, is no longer) `status`; waits up to 90 s. */
function jobWhen(s: { port: number }, auth: string, id: string, status: string, not = false) {
  return until(
    () => api(s.port, auth).job(id),
    (j) => (j.status === status) !== not,
    90_000,
  );
}

async function stopCleanly(s: Spawned): Promise<void> {
  s.child.kill('SIGTERM');
  expect(await s.exited).toBe(0);
}

/** Whether `ids` each name one Slurm job, whose program ran once (its runs file has one pid). */
function ranOnce(jobId: string, release: string): void {
  expect(slurmJobsNamed(`media-${jobId}`)).toHaveLength(1);
  expect(readFileSync(`${release}.runs`, 'utf8').trim().split('\n')).toHaveLength(1);
}

describe('a Slurm job outlives its worker', () => {
  it('is taken over after kill -9 and a restart: its log goes on, it succeeds with its outputs, it ran once', async () => {
    const auth = `Bearer ${await issuer.token('dave')}`;
    const release = path.join(shared, 'release-kill');
    const first = await start();
    const jobId = await api(first.port, auth).run(`until "${release}"`);
    const running = await until(
      () => api(first.port, auth).job(jobId),
      (j) => j.status === 'running' && j.log_tail.includes('tick 3'),
      60_000,
    );
    first.child.kill('SIGKILL');
    await first.exited;
    expect(slurmJob(running.external_id!)!.state).toBe('RUNNING');

    const second = await start();
    const client = createClient({
      url: `ws://127.0.0.1:${second.port}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: auth },
      retryAttempts: 0,
    });
    try {
      // Its log continues live through the new worker.
      const live = await new Promise<string>((resolve, reject) => {
        const stop = client.subscribe<{ jobLogs: { line: string } }>(
          { query: 'subscription ($id: ID!) { jobLogs(id: $id) { line } }', variables: { id: jobId } },
          {
            next: (v) => {
              stop();
              resolve(v.data!.jobLogs.line);
            },
            error: reject,
            complete: () => reject(new Error('the log ended')),
          },
        );
      });
      expect(live).toMatch(/^tick \d+$/);
    } finally {
      await client.dispose();
    }
    writeFileSync(release, '');
    const job = await jobWhen(second, auth, jobId, 'running', true);
    expect(job).toMatchObject({ status: 'succeeded', error: null, external_id: running.external_id });
    expect(job.output.files.map((f) => f.name)).toEqual(['done.txt']);
    const file = await fetch(`http://127.0.0.1:${second.port}${new URL(job.result_urls[0]).pathname}`);
    expect(await file.text()).toMatch(/^done after \d+ ticks/);
    // The whole log: what the first worker saw, and what came after.
    const ticks = job.log_tail.split('\n').filter((l) => l.startsWith('tick '));
    expect(ticks.slice(0, 3)).toEqual(['tick 1', 'tick 2', 'tick 3']);
    expect(ticks.length).toBeGreaterThan(
      Number(
        /tick (\d+)/.exec(
          running.log_tail
            .split('\n')
            .filter((l) => l.startsWith('tick'))
            .at(-1)!,
        )![1],
      ),
    );
    const gql = await api(second.port, auth).call('POST', '/graphql', {
      query: 'query ($id: ID!) { job(id: $id) { transitions { to } } }',
      variables: { id: jobId },
    });
    const { transitions } = (gql.body.data as { job: { transitions: { to: string }[] } }).job;
    expect(transitions.map((x) => x.to)).toEqual(['QUEUED', 'STARTING', 'RUNNING', 'SUCCEEDED']);
    ranOnce(jobId, release);
    await stopCleanly(second);
  });

  it('is found by its name, not submitted again, when the worker died between sbatch and recording it', async () => {
    const auth = `Bearer ${await issuer.token('dave')}`;
    const release = path.join(shared, 'release-unrecorded');
    // An sbatch that submits, then never answers: the worker is stuck right after the submission.
    const bin = sharedDir('media-slurm-bin-');
    const replied = path.join(bin, 'submitted');
    const sbatch = execFileSync('sh', ['-c', 'command -v sbatch'], { encoding: 'utf8' }).trim();
    writeFileSync(
      path.join(bin, 'sbatch'),
      `#!/bin/sh\n"${sbatch}" "$@" > "${replied}"\necho $$ >> "${replied}.pid"\nexec sleep 600\n`,
    );
    chmodSync(path.join(bin, 'sbatch'), 0o755);
    const first = await start({ PATH: `${bin}:${process.env.PATH}` });
    const jobId = await api(first.port, auth).run(`until "${release}"`);
    await until(
      async () => existsSync(`${replied}.pid`),
      (e) => e,
      60_000,
    );
    const stuck = Number(readFileSync(`${replied}.pid`, 'utf8'));
    expect(await api(first.port, auth).job(jobId)).toMatchObject({ status: 'starting', external_id: null });
    first.child.kill('SIGKILL');
    await first.exited;
    process.kill(stuck, 'SIGKILL');
    const slurmId = readFileSync(replied, 'utf8').trim();
    expect(slurmJobsNamed(`media-${jobId}`)).toEqual([slurmId]);

    const second = await start();
    const job = await jobWhen(second, auth, jobId, 'running');
    expect(job.external_id).toBe(slurmId);
    writeFileSync(release, '');
    expect(await jobWhen(second, auth, jobId, 'running', true)).toMatchObject({
      status: 'succeeded',
      external_id: slurmId,
    });
    ranOnce(jobId, release);
    await stopCleanly(second);
  });

  it('ends a job that ran and ended while it was still starting: through running, to its result', async () => {
    const auth = `Bearer ${await issuer.token('dave')}`;
    // An sbatch that submits, then never answers: the job stays `starting` while it runs and ends.
    const bin = sharedDir('media-slurm-bin-');
    const replied = path.join(bin, 'submitted');
    const sbatch = execFileSync('sh', ['-c', 'command -v sbatch'], { encoding: 'utf8' }).trim();
    writeFileSync(
      path.join(bin, 'sbatch'),
      `#!/bin/sh\n"${sbatch}" "$@" > "${replied}"\necho $$ >> "${replied}.pid"\nexec sleep 600\n`,
    );
    chmodSync(path.join(bin, 'sbatch'), 0o755);
    const first = await start({ PATH: `${bin}:${process.env.PATH}` });
    const jobId = await api(first.port, auth).run('outputs');
    await until(
      async () => existsSync(`${replied}.pid`),
      (e) => e,
      60_000,
    );
    const stuck = Number(readFileSync(`${replied}.pid`, 'utf8'));
    const slurmId = readFileSync(replied, 'utf8').trim();
    await until(
      async () => slurmJob(slurmId)?.state,
      (state) => state === 'COMPLETED',
      60_000,
    );
    expect(await api(first.port, auth).job(jobId)).toMatchObject({ status: 'starting', external_id: null });
    first.child.kill('SIGKILL');
    await first.exited;
    process.kill(stuck, 'SIGKILL');

    const second = await start();
    const job = await until(
      () => api(second.port, auth).job(jobId),
      (j) => !['starting', 'running'].includes(j.status),
      90_000,
    );
    expect(job).toMatchObject({ status: 'succeeded', error: null, external_id: slurmId });
    expect(job.output.files.map((f) => f.name).sort()).toEqual(['a-first.txt', 'sub/second.csv']);
    const gql = await api(second.port, auth).call('POST', '/graphql', {
      query: 'query ($id: ID!) { job(id: $id) { transitions { to } } }',
      variables: { id: jobId },
    });
    const { transitions } = (gql.body.data as { job: { transitions: { to: string }[] } }).job;
    expect(transitions.map((x) => x.to)).toEqual(['QUEUED', 'STARTING', 'RUNNING', 'SUCCEEDED']);
    await stopCleanly(second);
  });

  it('runs on when its worker shuts down gracefully, and is taken over by the next start', async () => {
    const auth = `Bearer ${await issuer.token('dave')}`;
    const release = path.join(shared, 'release-shutdown');
    const first = await start();
    const jobId = await api(first.port, auth).run(`until "${release}"`);
    const running = await jobWhen(first, auth, jobId, 'running');
    await stopCleanly(first);
    expect(slurmJob(running.external_id!)!.state).toBe('RUNNING');
    const second = await start();
    expect((await api(second.port, auth).job(jobId)).status).toBe('running');
    writeFileSync(release, '');
    expect(await jobWhen(second, auth, jobId, 'running', true)).toMatchObject({ status: 'succeeded' });
    ranOnce(jobId, release);
    await stopCleanly(second);
  });

  it('is taken over by another worker when its own dies', async () => {
    const auth = `Bearer ${await issuer.token('erin')}`;
    const dir = sharedDir('media-slurm-two-');
    const db = new Client({ connectionString: env.DATABASE_URL });
    await db.connect();
    try {
      const instanceOf = async (s: Spawned) =>
        (await db.query('select id from worker_instances where pid = $1', [s.child.pid])).rows[0]
          ?.id as string;
      const followers = async (ids: string[]) =>
        (await db.query('select worker_id from jobs where id = any($1) order by id', [ids])).rows.map(
          (r) => r.worker_id as string,
        );
      const a = await start();
      const releases = [0, 1, 2].map((i) => path.join(dir, `release-${i}`));
      const jobIds: string[] = [];
      for (const r of releases) jobIds.push(await api(a.port, auth).run(`until "${r}"`));
      for (const id of jobIds) await jobWhen(a, auth, id, 'running');
      const b = await start();
      const [idA, idB] = [await instanceOf(a), await instanceOf(b)];
      expect(await followers(jobIds)).toEqual([idA, idA, idA]);
      a.child.kill('SIGKILL');
      await a.exited;
      // B finds A gone at its next reconciliation and follows A's jobs on the cluster from then on.
      expect(
        await until(
          () => followers(jobIds),
          (w) => w.every((x) => x === idB),
          60_000,
        ),
      ).toEqual([idB, idB, idB]);
      for (const r of releases) writeFileSync(r, '');
      for (const [i, id] of jobIds.entries()) {
        const job = await jobWhen(b, auth, id, 'running', true);
        expect(job).toMatchObject({ status: 'succeeded', error: null });
        expect(job.output.files.map((f) => f.name)).toEqual(['done.txt']);
        ranOnce(id, releases[i]);
      }
      // Nothing is left for a worker to follow.
      expect(await followers(jobIds)).toEqual([null, null, null]);
    } finally {
      await db.end();
    }
  });
});
