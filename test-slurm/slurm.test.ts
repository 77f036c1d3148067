import { createClient, type Client } from 'graphql-ws';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { builtinPrograms, slurmJobScript } from '../src/executors/executor.factory';
import type { SlurmExecutor } from '../src/executors/slurm.executor';
import { sbatchArgs } from '../src/executors/slurm.sbatch';
import { parseMachineTypes } from '../src/common/machine-types';
import { startTestApp, type TestApp } from '../test/helpers/app';
import { alive, BUILTIN, deploy, jobOf, waitForJob } from '../test/helpers/jobs';
import { until, uploadFile } from '../test/helpers/media';
import { PROGRAM, programModel, requireCluster, sharedDir, slurmJob } from './helpers';

jest.setTimeout(120_000);

let t: TestApp;
let jobsDir: string;
let alice: string;
let operator: string;

beforeAll(async () => {
  requireCluster();
  // A secret in the service's own environment must never reach a job's.
  process.env.MEDIA_TEST_CANARY_SECRET = 'canary';
  jobsDir = sharedDir('media-slurm-jobs-');
  t = await startTestApp({
    EXECUTOR: 'slurm',
    SLURM_POLL_SECONDS: '1',
    JOBS_DIR: jobsDir,
    ADMIN_SUBJECTS: 'operator',
  });
  alice = `Bearer ${await t.tokenFor('alice')}`;
  operator = `Bearer ${await t.tokenFor('operator')}`;
});
afterAll(() => t.close());

function connect(auth: string): Client {
  return createClient({
    url: `ws://127.0.0.1:${t.port}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: auth },
    retryAttempts: 0,
  });
}

const model = (mode: string, more: Record<string, unknown> = {}) => programModel(t, operator, mode, more);

async function rest(jobId: string) {
  return (await t.http().get(`/api/v1/jobs/${jobId}`).set('authorization', alice)).body;
}

describe('a job on Slurm', () => {
  it('runs a demo model from upload to downloadable result', async () => {
    const media = (await uploadFile(t, alice, Buffer.from('one two three\nfour\n'), 'w.txt')).body.media.id;
    const { jobId, targetAssetId } = await deploy(t, alice, BUILTIN.wordcount, { text: media });
    const job = await waitForJob(t, alice, jobId);
    expect(job).toMatchObject({ status: 'SUCCEEDED', result: { lines: 2, words: 4, characters: 19 } });
    const body = await rest(jobId);
    expect(body).toMatchObject({
      executor: 'slurm',
      external_id: expect.stringMatching(/^\d+$/),
      nodes: [hostname().split('.')[0]],
      pending_reason: null,
      exit_code: 0,
    });
    expect(slurmJob(body.external_id)).toMatchObject({ state: 'COMPLETED', name: `media-${jobId}` });
    expect(job.resultUrls).toEqual([expect.stringContaining(`/media/${targetAssetId}.json`)]);
    const served = await t.http().get(new URL(job.resultUrls[0]).pathname);
    expect(JSON.parse(served.text)).toEqual({ lines: 2, words: 4, characters: 19 });
    // The input was staged into the shared job directory, which is gone afterwards.
    expect(job.command.at(-1)).toMatch(/^inputs\//);
    await until(
      async () => readdirSync(jobsDir),
      (d) => d.length === 0,
    );
  });

  it('hands hostile values to the program as single literal arguments', async () => {
    const modelId = await model('argv', {
      args: {
        a: { type: 'string', format: ':value' },
        b: { type: 'string', format: '--b=:value' },
        c: { type: 'string', format: '-c :value' },
        d: { type: 'string', format: ':value' },
      },
    });
    const marker = path.join(jobsDir, 'pwned');
    const hostile = {
      a: `; touch ${marker}`,
      b: `$(touch ${marker}) \`touch ${marker}\``,
      c: `-rf\nsecond line | touch ${marker} && echo {args}`,
      d: `--wrap=touch ${marker}, x=y "quoted" 'single' \\ %j`,
    };
    const { jobId } = await deploy(t, alice, modelId, hostile);
    const job = await waitForJob(t, alice, jobId);
    expect(job.status).toBe('SUCCEEDED');
    expect(job.result).toEqual([hostile.a, `--b=${hostile.b}`, '-c', hostile.c, hostile.d]);
    expect(existsSync(marker)).toBe(false);
  });

  it('gives the program a clean environment: only its own variables and Slurm’s', async () => {
    const { jobId } = await deploy(t, alice, await model('outputs'), {});
    const job = await waitForJob(t, alice, jobId);
    expect(job.status).toBe('SUCCEEDED');
    const { env } = job.result as { env: string[] };
    expect(env.filter((name) => !name.startsWith('SLURM'))).toEqual([
      'ENVIRONMENT',
      'HOME',
      'HOSTNAME',
      'LANG',
      'MEDIA_JOB_ID',
      'OUTPUT_DIR',
      'PATH',
      'PWD',
      'TMPDIR',
    ]);
    expect(env).toContain('SLURM_JOB_ID');
    // Files are kept as with the local executor: regular ones only, the symlink refused.
    expect(job.resultUrls).toHaveLength(2);
  });

  it('fails a job whose program exits non-zero, with its exit code and what it printed', async () => {
    const { jobId } = await deploy(
      t,
      alice,
      await model('fail', { command: `node "${PROGRAM}" fail 3 {args}` }),
      {},
    );
    const job = await waitForJob(t, alice, jobId);
    expect(job).toMatchObject({ status: 'FAILED', exitCode: 3, error: 'the program exited with code 3' });
    expect(job.logTail).toContain('something went wrong');
    expect(slurmJob(job.externalId!)!.state).toBe('FAILED');
  });
});

describe('following a job on Slurm', () => {
  it('streams the lines of a program that prints many, live', async () => {
    const modelId = await model('lines', { command: `node "${PROGRAM}" lines 150 20 {args}` });
    const client = connect(alice);
    try {
      const { jobId } = await deploy(t, alice, modelId, {});
      const lines: string[] = [];
      let statusAtFirst = '';
      await new Promise<void>((resolve, reject) => {
        client.subscribe<{ jobLogs: { line: string } }>(
          { query: 'subscription ($id: ID!) { jobLogs(id: $id) { line } }', variables: { id: jobId } },
          {
            next: (v) => {
              if (!lines.length) void jobOf(t, alice, jobId).then((j) => (statusAtFirst = j.status));
              lines.push(v.data!.jobLogs.line);
            },
            error: reject,
            complete: resolve,
          },
        );
      });
      // Lines printed before the subscription began are in logTail; the rest arrive in order,
      // while the job runs.
      const first = Number(lines[0].split(' ')[1]);
      expect(lines).toEqual(Array.from({ length: 151 - first }, (_, i) => `line ${first + i}`));
      expect(first).toBeLessThan(150);
      expect(statusAtFirst).toBe('RUNNING');
      const job = await waitForJob(t, alice, jobId);
      expect(job.logTail.split('\n')).toEqual(Array.from({ length: 150 }, (_, i) => `line ${i + 1}`));
    } finally {
      await client.dispose();
    }
  });

  it("shows Slurm's pending reason while the job waits, and cancels it before it runs", async () => {
    const { jobId } = await deploy(t, alice, await model('argv', { machine_type: 'paused' }), {});
    const waiting = await until(
      () => rest(jobId),
      (j) => j.pending_reason !== null,
    );
    expect(waiting).toMatchObject({ status: 'starting', pending_reason: 'PartitionDown', nodes: [] });
    expect(slurmJob(waiting.external_id)).toMatchObject({ state: 'PENDING', name: `media-${jobId}` });
    const canceled = await t.http().post(`/api/v1/jobs/${jobId}/cancel`).set('authorization', alice);
    expect(canceled.body).toMatchObject({ status: 'canceled', started_at: null, run_seconds: null });
    expect(
      await until(
        async () => slurmJob(waiting.external_id)?.state,
        (s) => s === 'CANCELLED',
      ),
    ).toBe('CANCELLED');
  });

  it('cancels a running job with scancel: its process is gone and Slurm shows it CANCELLED', async () => {
    const { jobId } = await deploy(t, alice, await model('idle'), {});
    const job = await waitForJob(t, alice, jobId, (j) => /idle \d+/.test(j.logTail), 60_000);
    const pid = Number(/idle (\d+)/.exec(job.logTail)![1]);
    expect(alive(pid)).toBe(true);
    expect(slurmJob(job.externalId!)!.state).toBe('RUNNING');
    const res = await t.http().post(`/api/v1/jobs/${jobId}/cancel`).set('authorization', alice);
    expect(res.body.status).toBe('canceled');
    expect(
      await until(
        async () => slurmJob(job.externalId!)?.state,
        (s) => s === 'CANCELLED',
      ),
    ).toBe('CANCELLED');
    expect(
      await until(
        async () => alive(pid),
        (a) => !a,
      ),
    ).toBe(false);
    // What it printed is kept; nothing is left for a worker to follow.
    const ended = await waitForJob(t, alice, jobId, (j) => j.logTail.includes('idle'));
    expect(ended.status).toBe('CANCELED');
    const workerOf = async () =>
      (
        await t.runtime.orm.em
          .fork()
          .getConnection()
          .execute('select worker_id from jobs where id = ?', [jobId])
      )[0].worker_id as string | null;
    expect(await until(workerOf, (w) => w === null)).toBeNull();
  });

  it('stops a job at its timeout; Slurm holds the same limit in whole minutes', async () => {
    const { jobId } = await deploy(t, alice, await model('idle', { timeout_seconds: 3 }), {});
    const running = await waitForJob(t, alice, jobId, (j) => j.status === 'RUNNING');
    expect(slurmJob(running.externalId!)!.limit).toBe('1:00');
    const job = await waitForJob(t, alice, jobId);
    expect(job).toMatchObject({ status: 'FAILED', error: 'timed out after 3 s; its processes were stopped' });
    expect(job.runSeconds).toBeGreaterThan(0);
    expect(slurmJob(job.externalId!)!.state).toBe('CANCELLED');
  });

  it('fails a job canceled on the cluster behind the service, in words', async () => {
    const { jobId } = await deploy(t, alice, await model('idle'), {});
    const running = await waitForJob(t, alice, jobId, (j) => j.status === 'RUNNING');
    execFileSync('scancel', [running.externalId!]);
    const job = await waitForJob(t, alice, jobId);
    expect(job).toMatchObject({
      status: 'FAILED',
      error: 'canceled on the cluster, not through the service (Slurm: CANCELLED)',
    });
  });

  it('fails a job Slurm refuses, saying why', async () => {
    const { jobId } = await deploy(t, alice, await model('argv', { machine_type: 'no-such-partition' }), {});
    const job = await waitForJob(t, alice, jobId);
    expect(job).toMatchObject({ status: 'FAILED', externalId: null });
    expect(job.error).toMatch(
      /^could not submit the job to Slurm: Batch job submission failed: Invalid partition name specified$/,
    );
  });
});

describe('a worker on Slurm', () => {
  it('follows more jobs than it has dispatch slots, and submits a burst a few at a time', async () => {
    const release = path.join(sharedDir('media-slurm-burst-'), 'release');
    const modelId = await model('until', { command: `node "${PROGRAM}" until "${release}" {args}` });
    const jobs = await Promise.all(Array.from({ length: 12 }, () => deploy(t, alice, modelId, {})));
    // All of them run at once: no job holds one of the worker's 8 dispatch tasks while it runs.
    const statuses = () => Promise.all(jobs.map(async (d) => (await jobOf(t, alice, d.jobId)).status));
    expect(await until(statuses, (s) => s.every((x) => x === 'RUNNING'), 90_000)).toEqual(
      Array(12).fill('RUNNING'),
    );
    const executor = (t.runtime.runner as unknown as { executor: SlurmExecutor }).executor;
    expect(executor.peakCommands).toBeLessThanOrEqual(4);
    writeFileSync(release, '');
    for (const d of jobs) expect((await waitForJob(t, alice, d.jobId)).status).toBe('SUCCEEDED');
  });

  /** A job that a worker which is gone left running, and that Slurm has forgotten meanwhile. */
  async function lostJob(maxRetries: number): Promise<string> {
    const { jobId: done } = await deploy(t, alice, await model('argv'), {});
    await waitForJob(t, alice, done);
    const lost = randomUUID();
    await t.runtime.orm.em.getConnection().execute(
      `with d as (insert into deployments (id, owner_type, owner_id, name, model_id, args, target_asset_id, created_at)
                  select gen_random_uuid(), owner_type, owner_id, 'lost', model_id, '{}', gen_random_uuid(), now()
                  from deployments where id = (select deployment_id from jobs where id = ?) returning *)
       insert into jobs (id, deployment_id, model_id, owner_type, owner_id, status, executor, external_id, worker_id,
                         argv, container, machine_type, machine_count, timeout_seconds, max_retries,
                         created_at, updated_at, started_at)
       select ?, d.id, d.model_id, d.owner_type, d.owner_id, 'running', 'slurm', '99999999', gen_random_uuid(),
              '["true"]', 'local', 'cpu', 1, 60, ?, now(), now(), now() from d`,
      [done, lost, maxRetries],
    );
    await t.runtime.runner!.reconcile();
    return lost;
  }

  it('fails a job the cluster no longer knows, in words', async () => {
    const lost = await lostJob(0);
    const job = await waitForJob(t, alice, lost);
    expect(job).toMatchObject({
      status: 'FAILED',
      error: 'the cluster no longer knows Slurm job 99999999; nothing of it is left to follow',
    });
    expect(await rest(lost)).toMatchObject({ infrastructure_failure: true, attempt: 1 });
  });

  it("retries a job the cluster lost, per its model's max_retries, on Slurm again", async () => {
    const lost = await lostJob(1);
    expect((await waitForJob(t, alice, lost)).status).toBe('FAILED');
    expect(await rest(lost)).toMatchObject({ infrastructure_failure: true, attempt: 1, max_retries: 1 });
    const [retry] = await t.runtime.orm.em
      .getConnection()
      .execute<{ id: string }[]>('select id from jobs where retry_of = ?', [lost]);
    expect((await waitForJob(t, alice, retry.id)).status).toBe('SUCCEEDED');
    expect(await rest(retry.id)).toMatchObject({
      executor: 'slurm',
      attempt: 2,
      retry_of: lost,
      infrastructure_failure: false,
    });
  });
});

describe('machine types on Slurm', () => {
  const text = [
    'machine_types:',
    '  cpu: { slurm: { partition: cpu } }',
    '  small: { description: two CPUs, slurm: { partition: cpu, cpus: 2, memory: 100M } }',
    '  second: { slurm: { partition: gpu } }',
  ].join('\n');
  const types = parseMachineTypes(text);

  it("runs a model on its machine type's partition and resources", async () => {
    const file = path.join(sharedDir('media-slurm-types-'), 'machines.yaml');
    writeFileSync(file, text);
    const app = await startTestApp(
      { EXECUTOR: 'slurm', SLURM_POLL_SECONDS: '1', MACHINE_TYPES_FILE: file, ADMIN_SUBJECTS: 'operator' },
      // A database of its own: the other app's worker would take its jobs, with its own config.
      { issuer: t.issuer },
    );
    try {
      const res = await app
        .http()
        .post('/api/v1/models')
        .set('authorization', operator)
        .send({
          name: 'small',
          container: 'local',
          command: `node "${PROGRAM}" idle {args}`,
          args: {},
          machine_type: 'small',
        });
      expect(res.status).toBe(201);
      const { jobId } = await deploy(app, alice, res.body.id, {});
      const running = await waitForJob(app, alice, jobId, (j) => j.status === 'RUNNING');
      expect(slurmJob(running.externalId!)).toMatchObject({ partition: 'cpu', cpus: '2' });
      await app.gql('mutation ($id: ID!) { cancelJob(id: $id) { id } }', { id: jobId }, alice);
      const refused = await app
        .http()
        .post('/api/v1/models')
        .set('authorization', operator)
        .send({ name: 'big', container: 'local', command: 'true {args}', args: {}, machine_type: 'huge' });
      expect(refused.body.error.details).toEqual({
        machineType: expect.stringContaining('cpu, small, second'),
      });
    } finally {
      await app.close();
    }
  });

  it('gives Slurm arguments it accepts for every machine type, and for OCI containers', () => {
    const spec = {
      jobId: randomUUID(),
      owner: { type: 'user' as const, id: randomUUID() },
      argv: ['true'],
      env: {},
      container: '/srv/bundles/upscale',
      machineType: 'cpu',
      machineCount: 1,
      timeoutSeconds: 60,
      inputs: [],
      workDir: jobsDir,
      outputDir: path.join(jobsDir, 'output'),
    };
    const opts = { script: slurmJobScript(), machineTypes: types, programs: builtinPrograms() };
    const check = (args: string[]) =>
      execFileSync('sbatch', ['--test-only', ...args.filter((a) => a !== '--parsable')], {
        encoding: 'utf8',
        stdio: 'pipe',
      });
    for (const machineType of types.keys())
      check(sbatchArgs({ ...spec, machineType }, { ...opts, runtime: 'none' }));
    check(sbatchArgs(spec, { ...opts, runtime: 'oci' }));
    // pyxis adds options of its own (a SPANK plugin), which this cluster does not load.
    expect(() => check(sbatchArgs(spec, { ...opts, runtime: 'pyxis' }))).toThrow(
      /unrecognized option '--container-image/,
    );
  });
});
