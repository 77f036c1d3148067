import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startTestApp, type TestApp } from '../test/helpers/app';
import { until } from '../test/helpers/media';
import { programModel, requireCluster, sharedDir, slurmJob } from './helpers';

/**
 * A batch through the whole service on Slurm (docs/batches.md, "Executors"): REST creates it, the
 * runner dispatches its chunk with one `dispatch_batch` task and SlurmExecutor.submitMany makes a
 * job array of it. The service reaches Slurm's commands through wrappers (its PATH) that log each
 * call, then run the real command, so the test counts the `sbatch` calls.
 */

jest.setTimeout(180_000);

const ITEMS = 12;

let shared: string;
let calls: string;
let env: Record<string, string>;
let t: TestApp;
let alice: string;
let operator: string;
/** Array ids of this suite, canceled at its end whatever happened. */
const arrays = new Set<string>();

beforeAll(async () => {
  requireCluster();
  shared = sharedDir('media-slurm-batches-');
  const jobsDir = path.join(shared, 'jobs');
  const bin = path.join(shared, 'bin');
  mkdirSync(jobsDir);
  chmodSync(jobsDir, 0o755);
  mkdirSync(bin);
  calls = path.join(shared, 'calls');
  for (const command of ['sbatch', 'squeue', 'scancel', 'scontrol']) {
    const real = execFileSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' }).trim();
    const wrapper = path.join(bin, command);
    writeFileSync(
      wrapper,
      ['#!/bin/sh', `printf '%s\\n' "${command} $*" >> "${calls}"`, `exec "${real}" "$@"`].join('\n'),
    );
    chmodSync(wrapper, 0o755);
  }
  env = {
    EXECUTOR: 'slurm',
    SLURM_POLL_SECONDS: '1',
    JOBS_DIR: jobsDir,
    ADMIN_SUBJECTS: 'operator',
    // The executor runs Slurm's commands from PATH (the local executor's setting, see config).
    PATH: `${bin}:${process.env.PATH}`,
  };
  t = await startTestApp(env);
  alice = `Bearer ${await t.tokenFor('alice')}`;
  operator = `Bearer ${await t.tokenFor('operator')}`;
});
afterAll(async () => {
  await t?.close();
  if (arrays.size) execFileSync('scancel', [...arrays], { stdio: 'pipe' });
  if (shared) rmSync(shared, { recursive: true, force: true });
});

const api = (auth: string) => ({
  post: (url: string, body?: unknown) =>
    t
      .http()
      .post(url)
      .set('authorization', auth)
      .send(body as object),
  get: (url: string) => t.http().get(url).set('authorization', auth),
});

interface RestBatch {
  status: string;
  total: number;
  counts: Record<'queued' | 'starting' | 'running' | 'succeeded' | 'failed' | 'canceled', number>;
}
interface RestBatchJob {
  id: string;
  status: string;
  external_id: string | null;
  executor: string;
}

const batchUntil = (id: string, done: (b: RestBatch) => boolean, ms = 120_000) =>
  until(async () => (await api(alice).get(`/api/v1/batches/${id}`)).body as RestBatch, done, ms);

async function jobsOf(id: string): Promise<RestBatchJob[]> {
  const res = await api(alice).get(`/api/v1/batches/${id}/jobs?limit=100`);
  expect(res.status).toBe(200);
  return res.body as RestBatchJob[];
}

/** Slurm commands the service ran so far, in order. */
const logLines = () => (existsSync(calls) ? readFileSync(calls, 'utf8').split('\n').slice(0, -1) : []);

/** The array's tasks Slurm still has pending or running (squeue's default states). */
function liveTasks(arrayId: string): string[] {
  try {
    return execFileSync('squeue', ['--noheader', '--array', `--jobs=${arrayId}`, '--format=%i|%T'], {
      encoding: 'utf8',
      stdio: 'pipe',
    })
      .split('\n')
      .filter(Boolean);
  } catch {
    return []; // squeue fails when asked about a job it no longer knows
  }
}

async function createBatch(mode: string, name: string): Promise<string> {
  const model = await programModel(t, operator, mode, { args: { n: { type: 'int', format: ':value' } } });
  const res = await api(alice).post('/api/v1/batches', {
    name,
    model_id: model,
    inputs: { items: Array.from({ length: ITEMS }, (_, n) => ({ n })) },
  });
  expect(res.status).toBe(201);
  expect(res.body.total).toBe(ITEMS);
  return res.body.id as string;
}

/** The one array id the jobs' external ids (`<array id>_<task id>`) share, checked. */
function arrayOf(jobs: RestBatchJob[]): string {
  const ids = jobs.map((j) => j.external_id);
  for (const id of ids) expect(id).toMatch(/^\d+_\d+$/);
  const arrayIds = [...new Set(ids.map((id) => id!.split('_')[0]))];
  expect(arrayIds).toHaveLength(1);
  arrays.add(arrayIds[0]);
  // One task per job: 0..N-1, each once.
  expect(ids.map((id) => Number(id!.split('_')[1])).sort((a, b) => a - b)).toEqual(
    Array.from({ length: jobs.length }, (_, i) => i),
  );
  return arrayIds[0];
}

describe('a batch on Slurm, through the service', () => {
  it('runs its items as one job array, submitted with one sbatch, to completed', async () => {
    const before = logLines().length;
    const id = await createBatch('argv', 'array batch');
    const done = await batchUntil(id, (b) => b.status === 'completed');
    expect(done.counts).toMatchObject({ succeeded: ITEMS, failed: 0, canceled: 0, queued: 0, running: 0 });
    const jobs = await jobsOf(id);
    expect(jobs).toHaveLength(ITEMS);
    expect(jobs.every((j) => j.executor === 'slurm' && j.status === 'succeeded')).toBe(true);
    arrayOf(jobs);
    // Slurm itself ran each task to its end under the array.
    expect(slurmJob(jobs[0].external_id!)?.state).toBe('COMPLETED');
    const sbatches = logLines()
      .slice(before)
      .filter((c) => c.startsWith('sbatch '));
    expect(sbatches).toHaveLength(1);
    expect(sbatches[0]).toContain(`--array=0-${ITEMS - 1}`);
    // Each job's result is its own item's arguments (task i ran job i's argv, not another's).
    const results = await Promise.all(
      jobs.map(async (j) => (await api(alice).get(`/api/v1/jobs/${j.id}`)).body.output.result as string[]),
    );
    expect(results.map((r) => Number(r[0])).sort((a, b) => a - b)).toEqual(
      Array.from({ length: ITEMS }, (_, i) => i),
    );
  });

  it('cancels every job of a batch while its tasks run or wait, and Slurm keeps none of them', async () => {
    const before = logLines().length;
    const id = await createBatch('idle', 'canceled batch');
    await batchUntil(id, (b) => b.counts.running >= 1, 60_000);
    const submitted = await until(
      () => jobsOf(id),
      (jobs) => jobs.every((j) => j.external_id),
    );
    const arrayId = arrayOf(submitted);
    expect(liveTasks(arrayId).length).toBeGreaterThan(0);

    const res = await api(alice).post(`/api/v1/batches/${id}/cancel`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('canceled');
    expect(res.body.counts).toMatchObject({ canceled: ITEMS, running: 0, queued: 0, starting: 0 });
    expect((await jobsOf(id)).map((j) => j.status)).toEqual(Array(ITEMS).fill('canceled'));
    // The workers stop the tasks on Slurm: none is left pending or running.
    expect(
      await until(
        async () => liveTasks(arrayId),
        (live) => live.length === 0,
        60_000,
      ),
    ).toEqual([]);
    expect(
      logLines()
        .slice(before)
        .filter((c) => c.startsWith('sbatch ')),
    ).toHaveLength(1);
    const scancels = logLines()
      .slice(before)
      .filter((c) => c.startsWith('scancel '));
    expect(scancels.length).toBeGreaterThan(0);
    expect(scancels.every((c) => c.includes(arrayId))).toBe(true);
  });
});

describe('a batch larger than a worker’s room', () => {
  let small: TestApp;
  beforeAll(async () => {
    // Its own database and worker, following at most 4 jobs: the chunk is claimed 4 at a time.
    small = await startTestApp({ ...env, WORKER_CONCURRENCY: '4' });
  });
  afterAll(() => small?.close());

  it('submits what fits as an array and the rest later, each job once, to completed', async () => {
    const items = 10;
    const auth = `Bearer ${await small.tokenFor('alice')}`;
    const admin = `Bearer ${await small.tokenFor('operator')}`;
    const model = await programModel(small, admin, 'argv', {
      args: { n: { type: 'int', format: ':value' } },
    });
    const before = logLines().length;
    const res = await small
      .http()
      .post('/api/v1/batches')
      .set('authorization', auth)
      .send({
        name: 'room',
        model_id: model,
        inputs: { items: Array.from({ length: items }, (_, n) => ({ n })) },
      });
    expect(res.status).toBe(201);
    const done = await until(
      async () =>
        (await small.http().get(`/api/v1/batches/${res.body.id}`).set('authorization', auth))
          .body as RestBatch,
      (b) => b.status === 'completed',
      120_000,
    );
    expect(done.counts).toMatchObject({ succeeded: items, failed: 0, canceled: 0 });
    const jobs = (
      await small.http().get(`/api/v1/batches/${res.body.id}/jobs?limit=100`).set('authorization', auth)
    ).body as RestBatchJob[];
    const ids = jobs.map((j) => j.external_id!);
    for (const id of ids) arrays.add(id.split('_')[0]);
    expect(new Set(ids).size).toBe(items);
    const sbatches = logLines()
      .slice(before)
      .filter((c) => c.startsWith('sbatch '));
    // At least ceil(10 / 4) submissions, none of more than 4 tasks, and no job submitted twice.
    expect(sbatches.length).toBeGreaterThanOrEqual(3);
    const sizes = sbatches.map((c) => {
      const m = /--array=0-(\d+)/.exec(c);
      return m ? Number(m[1]) + 1 : 1;
    });
    expect(Math.max(...sizes)).toBeLessThanOrEqual(4);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(items);
  });
});
