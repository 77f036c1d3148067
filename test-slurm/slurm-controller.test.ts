import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createLogger } from '../src/common/logger';
import type { JobObserver } from '../src/executors/executor.port';
import { builtinPrograms, slurmJobScript } from '../src/executors/executor.factory';
import { SlurmExecutor } from '../src/executors/slurm.executor';
import { createTestDatabase } from '../test/helpers/db';
import { restApi as api, type RestJob } from '../test/helpers/jobs';
import { until } from '../test/helpers/media';
import { TestIssuer } from '../test/helpers/oidc-issuer';
import { spawnService, type Spawned } from '../test/helpers/process';
import { requireCluster, sharedDir, slurmJob, slurmJobsNamed } from './helpers';

/**
 * A restart of Slurm's controller (routine maintenance): slurmctld is stopped while jobs run, are
 * created and are canceled, then started again the way scripts/slurm-cluster.sh starts it. The
 * test always starts it again, whatever happens.
 */

jest.setTimeout(300_000);

const CLUSTER_SCRIPT = path.resolve(__dirname, '..', 'scripts', 'slurm-cluster.sh');
/** Where scripts/slurm-cluster.sh keeps the daemons' pid files. */
const STATE_DIR = '/var/lib/slurm-media-dev';

let issuer: TestIssuer;
let shared: string;
let service: (Spawned & { port: number }) | null = null;
/** Slurm jobs of this test, stopped at its end whatever happened. */
const slurmIds: string[] = [];

beforeAll(async () => {
  requireCluster();
  issuer = await TestIssuer.start();
  shared = sharedDir('media-slurm-controller-');
});
afterAll(async () => {
  startController();
  if (slurmIds.length) execFileSync('scancel', slurmIds, { stdio: 'pipe' });
  if (service && service.child.exitCode === null) {
    service.child.kill('SIGKILL');
    await service.exited;
  }
  await issuer?.stop();
  rmSync(shared, { recursive: true, force: true });
});

function controllerAnswers(): boolean {
  try {
    execFileSync('squeue', ['--noheader', '--jobs=1'], { stdio: 'pipe', timeout: 30_000 });
    return true;
  } catch (err) {
    return !/Unable to contact slurm controller/.test(String((err as { stderr?: Buffer }).stderr ?? ''));
  }
}

function stopController(): void {
  execFileSync('kill', [readFileSync(path.join(STATE_DIR, 'slurmctld.pid'), 'utf8').trim()]);
}

/** As scripts/slurm-cluster.sh does (idempotent): slurmctld again, and the node idle. */
function startController(): void {
  execFileSync(CLUSTER_SCRIPT, ['start'], { stdio: 'pipe', timeout: 120_000 });
}

function jobWhen(port: number, auth: string, id: string, ok: (j: RestJob) => boolean): Promise<RestJob> {
  return until(() => api(port, auth).job(id), ok, 120_000);
}

it('a controller restart: running jobs carry on, a new job waits starting and is submitted once, a cancel reaches the job', async () => {
  service = await spawnService({
    DATABASE_URL: await createTestDatabase(),
    OIDC_ISSUER: issuer.issuer,
    DATA_DIR: path.join(shared, 'data'),
    EXECUTOR: 'slurm',
    SLURM_POLL_SECONDS: '1',
    LOCAL_EXECUTOR_TRUST: 'any',
    ROLES: 'api,worker',
  });
  const { port } = service;
  const auth = `Bearer ${await issuer.token('erin')}`;
  const releaseRunning = path.join(shared, 'release-running');
  const releaseCanceled = path.join(shared, 'release-canceled');
  const running = await api(port, auth).run(`until "${releaseRunning}"`);
  const canceled = await api(port, auth).run(`until "${releaseCanceled}"`);
  const ticking = (j: RestJob) => j.status === 'running' && j.log_tail.includes('tick 2');
  slurmIds.push((await jobWhen(port, auth, running, ticking)).external_id!);
  const toCancel = await jobWhen(port, auth, canceled, ticking);
  slurmIds.push(toCancel.external_id!);

  let created: string;
  stopController();
  try {
    await until(
      async () => controllerAnswers(),
      (answers) => !answers,
      30_000,
    );
    created = await api(port, auth).run('argv');
    const cancel = await api(port, auth).call('POST', `/api/v1/jobs/${canceled}/cancel`);
    expect(cancel.body.status).toBe('canceled');
    // The new job waits, saying why, rather than failing.
    const waiting = await jobWhen(
      port,
      auth,
      created,
      (j) => j.status !== 'queued' && (j.status !== 'starting' || !!j.pending_reason),
    );
    expect(waiting).toMatchObject({ status: 'starting', external_id: null });
    expect(waiting.pending_reason).toMatch(/Unable to contact slurm controller/);
    // A job ending during the outage ends all the same (its exit status is its file).
    writeFileSync(releaseRunning, '');
    expect((await jobWhen(port, auth, running, (j) => j.status !== 'running')).status).toBe('succeeded');
    // Still waiting, a few retries later.
    expect((await api(port, auth).job(created)).status).toBe('starting');
  } finally {
    startController();
  }

  const done = await jobWhen(
    port,
    auth,
    created,
    (j) => !['queued', 'starting', 'running'].includes(j.status),
  );
  expect(done).toMatchObject({ status: 'succeeded', error: null, pending_reason: null });
  expect(slurmJobsNamed(`media-${created}`)).toEqual([done.external_id]);
  // The cancel made during the outage reached Slurm once it answered: the job is stopped.
  await until(
    async () => slurmJob(toCancel.external_id!)?.state ?? 'GONE',
    (state) => state !== 'RUNNING',
    60_000,
  );
  expect(slurmJob(toCancel.external_id!)?.state).toBe('CANCELLED');
  expect((await api(port, auth).job(canceled)).status).toBe('canceled');
});

it('a submission tried again (its answer lost) finds the job the first one submitted, and submits no second', async () => {
  const executor = new SlurmExecutor({
    path: process.env.PATH!,
    slurmConf: undefined,
    pollSeconds: 1,
    runtime: 'none',
    machineTypes: null,
    programs: builtinPrograms(),
    script: slurmJobScript(),
    log: createLogger('error'),
  });
  const jobId = randomUUID();
  const workDir = path.join(shared, 'retried', jobId);
  mkdirSync(path.join(workDir, 'output'), { recursive: true });
  const spec = {
    jobId,
    owner: { type: 'user' as const, id: 'erin' },
    argv: ['sleep', '60'],
    env: {},
    container: 'local',
    machineType: 'cpu',
    machineCount: 1,
    timeoutSeconds: 120,
    inputs: [],
    workDir,
    outputDir: path.join(workDir, 'output'),
  };
  const observer: JobObserver = { pending: () => {}, running: () => {}, line: () => {}, ended: () => {} };
  try {
    const first = await executor.submit(spec, observer);
    slurmIds.push(first);
    const again = await executor.submit(spec, observer, true);
    slurmIds.push(again);
    expect(again).toBe(first);
    expect(slurmJobsNamed(`media-${jobId}`)).toEqual([first]);
  } finally {
    await executor.close();
  }
});
