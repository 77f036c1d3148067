/**
 * `npm run bench -- slurm` (needs the one-node cluster: scripts/slurm-cluster.sh):
 * 1. latency from `createDeployment` to the job's `running` and `succeeded` events on a
 *    graphql-ws subscription, for a trivial program (`true`), over BENCH_SLURM_JOBS jobs run one at
 *    a time, next to a bare `sbatch` of the same program through the same batch script, polled
 *    with `squeue` every 100 ms, in the same run;
 * 2. throughput: BENCH_SLURM_BURST trivial jobs created at once, until the last one succeeded, next
 *    to the same number of bare `sbatch`es; the worker's CPU time and peak memory while it
 *    submits and follows them;
 * 3. job arrays (a batch's jobs): BENCH_SLURM_ARRAY trivial jobs through the executor's
 *    `submitMany` (one array per MaxArraySize), until every observer saw its end, next to a bare
 *    `sbatch --array=0-<N-1>` of the same program through the same batch script, followed by
 *    `squeue` every 250 ms until the array has left the queue; the ratio of the two.
 * 4. a batch (docs/batches.md) of BENCH_SLURM_BATCH trivial items through the service, from
 *    `POST /api/v1/batches` until the batch reads `completed`, next to the bare array of 3.
 * `BENCH_ONLY=arrays` runs the third alone (no service, no database); `BENCH_ONLY=batch` the
 * fourth and its bare array.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { randomUUID } from 'node:crypto';
import { createLogger } from '../src/common/logger';
import type { JobObserver } from '../src/executors/executor.port';
import { builtinPrograms, slurmJobScript } from '../src/executors/executor.factory';
import { SlurmExecutor } from '../src/executors/slurm.executor';
import {
  jobsClient,
  MiB,
  now,
  percentile,
  printTable,
  rssSampler,
  setting,
  SMOKE,
  startService,
  tempDir,
} from './lib';

const JOBS = setting('BENCH_SLURM_JOBS', 100, 2);
const BURST = setting('BENCH_SLURM_BURST', 1000, 5);
const POLL = process.env.BENCH_SLURM_POLL_SECONDS ?? '2';
const ARRAY = setting('BENCH_SLURM_ARRAY', 1000, 5);
const BATCH = setting('BENCH_SLURM_BATCH', 1000, 5);

const exec = promisify(execFile);
const fmt = (v: number) => v.toFixed(0);

/** CPU seconds (user + system) a process has used so far, and its ended children (sbatch, squeue). */
function cpuSecondsOf(pid: number): { own: number; children: number } {
  // After `(comm) `: utime, stime, cutime, cstime are fields 12 to 15 (0-based 11 to 14), in 1/100 s.
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ').map(Number);
  return { own: (f[11] + f[12]) / 100, children: (f[13] + f[14]) / 100 };
}

/** A bare sbatch of `true` through the service's batch script, in a directory of its own. */
async function bareSubmit(dir: string): Promise<string> {
  const work = mkdtempSync(path.join(dir, 'job-'));
  mkdirSync(path.join(work, '.job'));
  const { stdout } = await exec(
    'sbatch',
    ['--parsable', '--export=ALL', `--chdir=${work}`, '--output=/dev/null', slurmJobScript(), 'true'],
    { env: { PATH: process.env.PATH ?? '' } },
  );
  return stdout.trim();
}

/** Slurm's states of jobs, by id (one squeue). */
async function states(ids: string[]): Promise<Map<string, string>> {
  const { stdout } = await exec('squeue', [
    '--noheader',
    '--states=all',
    `--jobs=${ids.join(',')},${ids[0]}`,
    '--format=%i|%T',
  ]);
  return new Map(
    stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split('|') as [string, string]),
  );
}

/** Waits until the jobs have all ended; answers when all had reached Slurm, and how many failed. */
async function allEnded(databaseUrl: string, ids: string[]): Promise<{ submitted: number; failed: number }> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  let submitted = 0;
  try {
    for (;;) {
      const { rows } = await db.query(
        `select count(*) filter (where status in ('succeeded', 'failed', 'canceled'))::int as ended,
                count(*) filter (where external_id is not null or status <> 'starting' and status <> 'queued')::int as submitted,
                count(*) filter (where status <> 'succeeded')::int as failed
         from jobs where id = any($1)`,
        [ids],
      );
      if (!submitted && rows[0].submitted === ids.length) submitted = now();
      if (rows[0].ended === ids.length) return { submitted: submitted || now(), failed: rows[0].failed };
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    await db.end();
  }
}

async function bareLatency(dir: string): Promise<{ running: number[]; done: number[] }> {
  const running: number[] = [];
  const done: number[] = [];
  for (let i = 0; i < JOBS; i++) {
    const start = now();
    const id = await bareSubmit(dir);
    let ran = 0;
    for (;;) {
      const state = (await states([id])).get(id);
      if (!ran && state && state !== 'PENDING' && state !== 'CONFIGURING') ran = now();
      if (state === 'COMPLETED') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    running.push(ran - start);
    done.push(now() - start);
  }
  return { running, done };
}

async function bareBurst(dir: string): Promise<number> {
  const start = now();
  const ids: string[] = [];
  // Four at a time, as the worker submits.
  const queue = Array.from({ length: BURST }, (_, i) => i);
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (queue.shift() !== undefined) ids.push(await bareSubmit(dir));
    }),
  );
  for (;;) {
    const s = await states(ids);
    if (ids.every((id) => s.get(id) === 'COMPLETED')) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  return (now() - start) / 1000;
}

function latency(
  service: { running: number[]; succeeded: number[] },
  bare: { running: number[]; done: number[] },
): void {
  const row = (what: string, v: number[], base: number[]) => ({
    what,
    'p50 ms': fmt(percentile(v, 50)),
    'p99 ms': fmt(percentile(v, 99)),
    'p50 over bare, ms': fmt(percentile(v, 50) - percentile(base, 50)),
  });
  printTable(`Latency over ${JOBS} trivial jobs, one at a time (SLURM_POLL_SECONDS=${POLL})`, [
    row('bare sbatch -> RUNNING seen by squeue (100 ms polls)', bare.running, bare.running),
    row('bare sbatch -> COMPLETED seen by squeue (100 ms polls)', bare.done, bare.done),
    row('createDeployment -> RUNNING event', service.running, bare.running),
    row('createDeployment -> SUCCEEDED event', service.succeeded, bare.done),
  ]);
}

/** A bare array of `count` tasks of `true` through the batch script; seconds until squeue shows none. */
async function bareArray(dir: string, count: number): Promise<number> {
  const work = mkdtempSync(path.join(dir, 'array-'));
  mkdirSync(path.join(work, '.job'));
  const start = now();
  const { stdout } = await exec(
    'sbatch',
    [
      '--parsable',
      `--array=0-${count - 1}`,
      '--export=ALL',
      `--chdir=${work}`,
      '--output=/dev/null',
      slurmJobScript(),
      'true',
    ],
    { env: { PATH: process.env.PATH ?? '' } },
  );
  const id = stdout.trim().split(';')[0];
  for (;;) {
    const { stdout: left } = await exec('squeue', ['--noheader', `--jobs=${id}`, '--format=%i']).catch(
      () => ({
        stdout: '',
      }),
    );
    if (!left.trim()) return (now() - start) / 1000;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** `count` jobs of `true` through submitMany; seconds until every observer saw its end, and how many failed. */
async function executorArray(dir: string, count: number): Promise<{ seconds: number; failed: number }> {
  const executor = new SlurmExecutor({
    path: process.env.PATH ?? '',
    slurmConf: undefined,
    pollSeconds: Number(POLL),
    runtime: 'none',
    machineTypes: null,
    programs: builtinPrograms(),
    script: slurmJobScript(),
    arrayScript: slurmJobScript('slurm.array.sh'),
    log: createLogger('warn'),
  });
  const keepAlive = setInterval(() => undefined, 1000); // the executor's timers do not hold the process
  try {
    const specs = Array.from({ length: count }, () => {
      const jobId = randomUUID();
      const workDir = path.join(dir, jobId);
      mkdirSync(path.join(workDir, 'output'), { recursive: true });
      return {
        jobId,
        owner: { type: 'user' as const, id: 'bench' },
        argv: ['true'],
        env: {},
        container: 'local',
        machineType: 'cpu',
        machineCount: 1,
        timeoutSeconds: 600,
        inputs: [],
        workDir,
        outputDir: path.join(workDir, 'output'),
      };
    });
    let failed = 0;
    const start = now();
    const ended: Promise<void>[] = [];
    const observers = specs.map(() => {
      let done!: () => void;
      ended.push(new Promise<void>((r) => (done = r)));
      const o: JobObserver = {
        pending: () => undefined,
        running: () => undefined,
        line: () => undefined,
        ended: (exit) => {
          if (exit.exitCode !== 0) failed++;
          done();
        },
      };
      return o;
    });
    await executor.submitMany(specs, observers);
    await Promise.all(ended);
    return { seconds: (now() - start) / 1000, failed };
  } finally {
    clearInterval(keepAlive);
    await executor.close();
  }
}

async function arrays(scratch: string): Promise<void> {
  const bare = await bareArray(scratch, ARRAY);
  const ours = await executorArray(scratch, ARRAY);
  printTable(`${ARRAY} trivial jobs as a job array (SLURM_POLL_SECONDS=${POLL})`, [
    {
      what: `bare sbatch --array=0-${ARRAY - 1}, until squeue shows none`,
      seconds: bare.toFixed(1),
      'jobs/s': (ARRAY / bare).toFixed(1),
      ratio: '1.00',
    },
    {
      what: 'submitMany, until every observer saw its end',
      seconds: ours.seconds.toFixed(1),
      'jobs/s': (ARRAY / ours.seconds).toFixed(1),
      ratio: (ours.seconds / bare).toFixed(2),
    },
  ]);
  if (ours.failed) console.log(`${ours.failed} jobs failed`);
}

/**
 * Part 4: a batch of `count` items of the trivial model through the service, request to
 * `completed` (polled every 250 ms, as the bare side polls squeue), then the bare array.
 */
async function batch(url: string, auth: string, modelId: string, scratch: string, count: number) {
  const call = async (method: string, url2: string, body?: unknown) => {
    const res = await fetch(url + url2, {
      method,
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const answer = (await res.json()) as { id: string; status: string; counts: Record<string, number> };
    if (res.status >= 300) throw new Error(`${method} ${url2}: ${res.status} ${JSON.stringify(answer)}`);
    return answer;
  };
  const start = now();
  const { id } = await call('POST', '/api/v1/batches', {
    name: 'bench',
    model_id: modelId,
    inputs: { items: Array.from({ length: count }, () => ({})) },
  });
  const created = now();
  let last: Awaited<ReturnType<typeof call>>;
  for (;;) {
    last = await call('GET', `/api/v1/batches/${id}`);
    if (last.status !== 'running') break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const ours = (now() - start) / 1000;
  const bare = await bareArray(scratch, count);
  printTable(`A batch of ${count} trivial items on Slurm (SLURM_POLL_SECONDS=${POLL})`, [
    {
      what: `bare sbatch --array=0-${count - 1}, until squeue shows none`,
      seconds: bare.toFixed(1),
      'jobs/s': (count / bare).toFixed(1),
      ratio: '1.00',
    },
    {
      what: 'POST /api/v1/batches, until the batch reads completed',
      seconds: ours.toFixed(1),
      'jobs/s': (count / ours).toFixed(1),
      ratio: (ours / bare).toFixed(2),
    },
  ]);
  console.log(
    `\nThe batch was created in ${((created - start) / 1000).toFixed(2)} s; ` +
      `it ended ${last.status}: ${JSON.stringify(last.counts)}`,
  );
}

export async function run(): Promise<void> {
  await exec('sinfo', ['--noheader']).catch((err: Error) => {
    throw new Error(`the Slurm benchmark needs a cluster (scripts/slurm-cluster.sh): ${err.message}`);
  });
  if (process.env.BENCH_ONLY === 'arrays') return arrays(await tempDir('bench-slurm-arrays-'));
  const scratch = await tempDir('bench-slurm-');
  const sut = await startService({
    ROLES: 'api,worker',
    EXECUTOR: 'slurm',
    SLURM_POLL_SECONDS: POLL,
    LOCAL_EXECUTOR_TRUST: 'any',
  });
  const auth = `Bearer ${await sut.token('bench')}`;
  const jobs = await jobsClient(sut.service.url, auth, 'true {args}');
  const { eventOf } = jobs;
  let retries = 0;
  /**
   * Creates a deployment; tries again after a 503 or 500 (a database pool starved on a busy
   * machine) or a connection that timed out (1,000 at once overflow the listen backlog).
   */
  const create = async (): Promise<string> => {
    for (;;) {
      try {
        return await jobs.create();
      } catch (err) {
        // A connection refused or timed out never reached the service: sending again is safe.
        if (!/UNAVAILABLE|INTERNAL|fetch failed/.test((err as Error).message)) throw err;
        retries++;
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  };
  try {
    for (let i = 0; i < (SMOKE ? 1 : 3); i++) await eventOf(await create(), 'SUCCEEDED'); // warm-up
    if (process.env.BENCH_ONLY === 'batch')
      return await batch(sut.service.url, auth, jobs.modelId, scratch, BATCH);

    if (JOBS) latency(await jobs.latencies(JOBS, create), await bareLatency(scratch));

    const pid = sut.service.process.pid!;
    const cpuBefore = cpuSecondsOf(pid);
    const memory = rssSampler(pid, 100);
    retries = 0;
    const start = now();
    let peak: number;
    let ended: { submitted: number; failed: number };
    let created = 0;
    try {
      const ids = await Promise.all(Array.from({ length: BURST }, () => create()));
      created = now();
      // Read from the database: 4,000 events in a few minutes leave a lone subscriber more than
      // 1,000 events behind, and the service ends such a subscription (docs/jobs.md).
      ended = await allEnded(sut.db.url, ids);
    } finally {
      peak = memory.stop();
    }
    const seconds = (now() - start) / 1000;
    const cpuAfter = cpuSecondsOf(pid);
    const bareSeconds = await bareBurst(scratch);
    printTable(`Throughput of ${BURST} trivial jobs created at once`, [
      {
        what: `bare sbatch (4 at a time), until squeue shows all COMPLETED`,
        seconds: bareSeconds.toFixed(1),
        'jobs/s': (BURST / bareSeconds).toFixed(1),
        'worker CPU s (its sbatch, squeue)': '-',
        'worker peak RSS MiB': '-',
      },
      {
        what: 'createDeployment at once, until all have ended',
        seconds: seconds.toFixed(1),
        'jobs/s': (BURST / seconds).toFixed(1),
        'worker CPU s (its sbatch, squeue)': `${(cpuAfter.own - cpuBefore.own).toFixed(1)} (${(cpuAfter.children - cpuBefore.children).toFixed(1)})`,
        'worker peak RSS MiB': (peak / MiB).toFixed(0),
      },
    ]);
    console.log(
      `\nAll ${BURST} deployments were created after ${((created - start) / 1000).toFixed(1)} s; ` +
        `all jobs had reached Slurm after ${((ended.submitted - start) / 1000).toFixed(1)} s.`,
    );
    if (ended.failed) console.log(`${ended.failed} jobs failed`);
    if (retries)
      console.log(
        `\n${retries} createDeployment requests failed (503, 500, connection timeout) and were sent again`,
      );
    if (BATCH) await batch(sut.service.url, auth, jobs.modelId, scratch, BATCH);
  } finally {
    await jobs.dispose();
    await sut.stop();
  }
  if (ARRAY) await arrays(scratch);
}
