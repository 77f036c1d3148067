import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createLogger } from '../src/common/logger';
import type { JobExit, JobObserver, JobSpec, LogStream } from '../src/executors/executor.port';
import { builtinPrograms, slurmJobScript } from '../src/executors/executor.factory';
import { SlurmExecutor } from '../src/executors/slurm.executor';
import { until } from '../test/helpers/media';
import { requireCluster, sharedDir, slurmJob } from './helpers';

/**
 * A batch's jobs on Slurm (docs/executors.md, "Job arrays"): submitMany through the executor port
 * against the one-node cluster, each job one task of a job array, followed by observers as the
 * job runner's JobFollow follows a job. Slurm's commands are reached through wrappers that log
 * each call (and, for one test, make MaxArraySize small), then run the real command.
 */

jest.setTimeout(180_000);

let shared: string;
let jobsDir: string;
let bin: string;
let calls: string;
const executors: SlurmExecutor[] = [];
/** Slurm ids of this suite, stopped at its end whatever happened. */
const slurmIds = new Set<string>();

beforeAll(() => {
  requireCluster();
  shared = sharedDir('media-slurm-arrays-');
  jobsDir = path.join(shared, 'jobs');
  mkdirSync(jobsDir);
  bin = path.join(shared, 'bin');
  mkdirSync(bin);
  calls = path.join(shared, 'calls');
  for (const command of ['sbatch', 'squeue', 'scancel', 'scontrol']) {
    const real = execFileSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' }).trim();
    const wrapper = path.join(bin, command);
    writeFileSync(
      wrapper,
      [
        '#!/bin/sh',
        `printf '%s\\n' "${command} $*" >> "${calls}"`,
        // MEDIA_TEST_MAX_ARRAY_SIZE (a file) stands for a cluster with a smaller MaxArraySize.
        // A file `sbatch-lost` stands for an answer lost on the way: submitted, then "unreachable".
        command === 'sbatch'
          ? `if [ -f "${shared}/sbatch-lost" ]; then "${real}" "$@" > /dev/null; echo 'sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)' >&2; exit 1; fi`
          : '',
        command === 'scontrol'
          ? `if [ -f "${shared}/max-array-size" ]; then "${real}" "$@" | sed "s/^MaxArraySize .*/MaxArraySize = $(cat "${shared}/max-array-size")/"; exit; fi`
          : '',
        `exec "${real}" "$@"`,
      ].join('\n'),
    );
    chmodSync(wrapper, 0o755);
  }
});
afterAll(async () => {
  for (const e of executors) await e.close();
  const ids = [...slurmIds].map((id) => id.split('_')[0]);
  if (ids.length) execFileSync('scancel', [...new Set(ids)], { stdio: 'pipe' });
  rmSync(shared, { recursive: true, force: true });
});

function executor(arrayTaskLimit = 0): SlurmExecutor {
  const e = new SlurmExecutor({
    arrayTaskLimit,
    path: `${bin}:${process.env.PATH}`,
    slurmConf: undefined,
    pollSeconds: 1,
    runtime: 'none',
    machineTypes: null,
    programs: builtinPrograms(),
    script: slurmJobScript(),
    arrayScript: slurmJobScript('slurm.array.sh'),
    log: createLogger('error'),
  });
  executors.push(e);
  return e;
}

/** Slurm commands run through the wrappers since `mark` (callsSince(mark())). */
function mark(): number {
  return existsSync(calls) ? readFileSync(calls, 'utf8').split('\n').length - 1 : 0;
}
function callsSince(from: number): string[] {
  return readFileSync(calls, 'utf8').split('\n').slice(from, -1);
}

/** A job as the runner hands it over: its own directory under JOBS_DIR, with `output/`. */
function specOf(argv: string[], timeoutSeconds = 120): JobSpec {
  const jobId = randomUUID();
  const workDir = path.join(jobsDir, jobId);
  mkdirSync(path.join(workDir, 'output'), { recursive: true });
  return {
    jobId,
    owner: { type: 'user', id: 'erin' },
    argv,
    env: {},
    container: 'local',
    machineType: 'cpu',
    machineCount: 1,
    timeoutSeconds,
    inputs: [],
    workDir,
    outputDir: path.join(workDir, 'output'),
  };
}

/** An observer in the style of the runner's JobFollow: what it was told, in order, and the end. */
class Followed implements JobObserver {
  readonly events: string[] = [];
  readonly lines: { stream: LogStream; line: string; earlier: boolean }[] = [];
  exit: JobExit | null = null;
  readonly ended$: Promise<JobExit>;
  private resolve!: (e: JobExit) => void;
  constructor() {
    this.ended$ = new Promise((r) => (this.resolve = r));
  }
  pending(reason: string | null): void {
    this.events.push(`pending ${reason}`);
  }
  running(): void {
    this.events.push('running');
  }
  line(stream: LogStream, line: string, earlier = false): void {
    if (this.exit) throw new Error('a line after the end');
    this.lines.push({ stream, line, earlier });
  }
  ended(exit: JobExit): void {
    if (this.exit) throw new Error('ended twice');
    this.exit = exit;
    this.events.push('ended');
    this.resolve(exit);
  }
  text(stream: LogStream = 'stdout'): string[] {
    return this.lines.filter((l) => l.stream === stream).map((l) => l.line);
  }
}

/** The program of a task: prints, writes its output file, exits with `code`. */
function task(i: number, code = 0): string[] {
  return [
    'sh',
    '-c',
    'echo "item $1 of job $MEDIA_JOB_ID in $(pwd)"; echo "to stderr $1" >&2; printf "%s" "$2" > "$OUTPUT_DIR/out.txt"; exit "$3"',
    'task',
    String(i),
    `result of item ${i}: it's "quoted" $(id) ; rm -rf /`,
    String(code),
  ];
}

describe('submitMany as a job array', () => {
  it('runs 20 jobs as the tasks of one array, each to its own output and exit code, followed by one squeue per poll', async () => {
    const e = executor();
    const specs = Array.from({ length: 20 }, (_, i) => specOf(task(i, i === 13 ? 3 : 0)));
    const observers = specs.map(() => new Followed());
    const from = mark();
    const started = Date.now();
    const ids = await e.submitMany(specs, observers);
    ids.forEach((id) => slurmIds.add(id));
    const arrayId = ids[0].split('_')[0];
    expect(ids).toEqual(specs.map((_, i) => `${arrayId}_${i}`));
    const exits = await Promise.all(observers.map((o) => o.ended$));
    const seconds = (Date.now() - started) / 1000;

    exits.forEach((exit, i) =>
      expect(exit).toEqual({ exitCode: i === 13 ? 3 : 0, signal: null, reason: null }),
    );
    specs.forEach((spec, i) => {
      const o = observers[i];
      // Pending until the cluster starts it; a task started before the first poll is first seen running.
      expect(o.events[0]).toMatch(/^(pending|running)/);
      expect(o.events.slice(-2)).toEqual(['running', 'ended']);
      expect(o.text()).toEqual([`item ${i} of job ${spec.jobId} in ${spec.workDir}`]);
      expect(o.text('stderr')).toEqual([`to stderr ${i}`]);
      expect(readFileSync(path.join(spec.outputDir, 'out.txt'), 'utf8')).toBe(
        `result of item ${i}: it's "quoted" $(id) ; rm -rf /`,
      );
    });
    expect(slurmJob(ids[13])!.state).toBe('FAILED');
    expect(slurmJob(ids[12])!.state).toBe('COMPLETED');

    const made = callsSince(from);
    const sbatch = made.filter((c) => c.startsWith('sbatch'));
    expect(sbatch).toHaveLength(1);
    expect(sbatch[0]).toContain('--array=0-19 ');
    // No job's argv or environment on the command line: only the two fixed scripts.
    expect(sbatch[0]).not.toContain('item');
    expect(sbatch[0]).toMatch(/slurm\.array\.sh \S+slurm\.job\.sh$/);
    // Every poll asked about the whole array with one id, in one squeue.
    const polls = made.filter((c) => c.startsWith('squeue') && c.includes('--jobs='));
    // One per round (1 s), and the first looks after the submission (50, 100, 200 ... ms).
    expect(polls.length).toBeGreaterThan(0);
    expect(polls.length).toBeLessThanOrEqual(Math.ceil(seconds) + 6);
    for (const p of polls) expect(p).toMatch(new RegExp(`--jobs=${arrayId}$`));
    // The array's directory is gone with its last task.
    expect(existsSync(path.join(jobsDir, '.arrays'))).toBe(true);
    expect(execFileSync('ls', ['-A', path.join(jobsDir, '.arrays')], { encoding: 'utf8' })).toBe('');
  });

  it('cancels one task while the others run to their end; a task over its timeout is stopped', async () => {
    const e = executor();
    const release = path.join(shared, 'release-cancel');
    const wait = [
      'sh',
      '-c',
      'echo started; while [ ! -f "$1" ]; do sleep 0.2; done; echo released',
      'w',
      release,
    ];
    const specs = [specOf(wait), specOf(['sleep', '300']), specOf(wait), specOf(['sleep', '300'], 2)];
    const observers = specs.map(() => new Followed());
    const ids = await e.submitMany(specs, observers);
    ids.forEach((id) => slurmIds.add(id));
    await until(
      async () => observers.every((o) => o.events.includes('running')),
      (all) => all,
      60_000,
    );
    const from = mark();
    await e.cancel(ids[1]);
    expect(await observers[1].ended$).toMatchObject({ reason: 'canceled' });
    // That task alone (the timeout guard of the fourth may scancel it meanwhile).
    expect(callsSince(from).filter((c) => c.startsWith('scancel') && !c.includes(ids[3]))).toEqual([
      `scancel ${ids[1]}`,
    ]);
    expect(slurmJob(ids[1])!.state).toBe('CANCELLED');
    // The worker's guard stops a task at its own timeout (2 s).
    expect(await observers[3].ended$).toMatchObject({ reason: 'timeout' });
    expect(observers[0].exit).toBeNull();
    writeFileSync(release, '');
    for (const i of [0, 2]) {
      expect(await observers[i].ended$).toEqual({ exitCode: 0, signal: null, reason: null });
      expect(observers[i].text()).toEqual(['started', 'released']);
    }
  });

  it('cancels every task of an array it submitted with one scancel of the array', async () => {
    const e = executor();
    const specs = Array.from({ length: 5 }, () => specOf(['sleep', '300']));
    const observers = specs.map(() => new Followed());
    const ids = await e.submitMany(specs, observers);
    ids.forEach((id) => slurmIds.add(id));
    const from = mark();
    await Promise.all(ids.map((id) => e.cancel(id)));
    const exits = await Promise.all(observers.map((o) => o.ended$));
    for (const exit of exits) expect(exit.reason).toBe('canceled');
    expect(callsSince(from).filter((c) => c.startsWith('scancel'))).toEqual([
      `scancel ${ids[0].split('_')[0]}`,
    ]);
    for (const id of ids) expect(slurmJob(id)!.state).toBe('CANCELLED');
  });

  it('splits jobs into arrays of MaxArraySize tasks, and jobs with other options into arrays of their own', async () => {
    writeFileSync(path.join(shared, 'max-array-size'), '4');
    try {
      const e = executor();
      const specs = [
        ...Array.from({ length: 9 }, (_, i) => specOf(task(i))),
        // Another partition: an array of its own, or a job of its own when alone.
        { ...specOf(task(9)), machineType: 'gpu' },
      ];
      const observers = specs.map(() => new Followed());
      const from = mark();
      const ids = await e.submitMany(specs, observers);
      ids.forEach((id) => slurmIds.add(id));
      // 4 + 4 tasks, then a job alone (the ninth), submitted as submit does; so is the gpu job.
      const arrays = ids.slice(0, 8).map((id) => id.split('_')[0]);
      expect(new Set(arrays).size).toBe(2);
      expect(ids.slice(0, 8).map((id) => id.split('_')[1])).toEqual(['0', '1', '2', '3', '0', '1', '2', '3']);
      expect(ids[8]).toMatch(/^\d+$/);
      expect(slurmJob(ids[8])!.name).toBe(`media-${specs[8].jobId}`);
      expect(ids[9]).toMatch(/^\d+$/);
      expect(slurmJob(ids[9])!.partition).toBe('gpu');
      const sbatch = callsSince(from).filter((c) => c.startsWith('sbatch'));
      expect(sbatch).toHaveLength(4);
      expect(sbatch.filter((c) => c.includes('--array=0-3 '))).toHaveLength(2);
      const exits = await Promise.all(observers.map((o) => o.ended$));
      exits.forEach((exit, i) => {
        expect(exit.exitCode).toBe(0);
        expect(observers[i].text()[0]).toBe(`item ${i} of job ${specs[i].jobId} in ${specs[i].workDir}`);
      });
    } finally {
      rmSync(path.join(shared, 'max-array-size'));
    }
  });

  it('runs at most SLURM_ARRAY_TASK_LIMIT tasks at once; the others wait with the reason Slurm gives', async () => {
    const e = executor(1);
    const specs = Array.from({ length: 3 }, () =>
      specOf(['sh', '-c', 'echo "$(date +%s%N)"; sleep 1; echo "$(date +%s%N)"']),
    );
    const observers = specs.map(() => new Followed());
    const from = mark();
    const ids = await e.submitMany(specs, observers);
    ids.forEach((id) => slurmIds.add(id));
    expect(callsSince(from).find((c) => c.startsWith('sbatch'))).toContain('--array=0-2%1 ');
    const exits = await Promise.all(observers.map((o) => o.ended$));
    for (const exit of exits) expect(exit.exitCode).toBe(0);
    expect(observers.some((o) => o.events.includes('pending JobArrayTaskLimit'))).toBe(true);
    // One at a time: each task started after the one before had ended.
    const spans = observers.map((o) => o.text().map(Number)).sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < spans.length; i++) expect(spans[i][0]).toBeGreaterThanOrEqual(spans[i - 1][1]);
  });

  it('a submission whose answer was lost is tried again: the array it submitted is followed, none submitted again', async () => {
    const e = executor();
    const specs = Array.from({ length: 3 }, (_, i) => specOf(task(i)));
    const observers = specs.map(() => new Followed());
    writeFileSync(path.join(shared, 'sbatch-lost'), '');
    try {
      await expect(e.submitMany(specs, observers)).rejects.toMatchObject({
        name: 'ExecutorUnavailableError',
        message: expect.stringContaining('Unable to contact slurm controller'),
      });
    } finally {
      rmSync(path.join(shared, 'sbatch-lost'));
    }
    const from = mark();
    const ids = await e.submitMany(specs, observers, true);
    ids.forEach((id) => slurmIds.add(id));
    expect(callsSince(from).filter((c) => c.startsWith('sbatch'))).toEqual([]);
    const key = readFileSync(path.join(specs[0].workDir, '.job', 'array'), 'utf8').split('\n')[0];
    const named = execFileSync(
      'squeue',
      ['--noheader', '--array', '--states=all', `--name=media-array-${path.basename(key)}`, '--format=%i'],
      {
        encoding: 'utf8',
      },
    );
    expect(named.split('\n').filter(Boolean).sort()).toEqual([...ids].sort());
    const exits = await Promise.all(observers.map((o) => o.ended$));
    for (const [i, o] of observers.entries()) {
      expect(exits[i].exitCode).toBe(0);
      expect(o.text()).toEqual([`item ${i} of job ${specs[i].jobId} in ${specs[i].workDir}`]);
    }
  });
});

describe('a task outlives its worker', () => {
  it('is adopted by a fresh executor, by its id or, unrecorded, by its array mark; its log goes on and it ends with its own exit', async () => {
    const first = executor();
    const release = path.join(shared, 'release-adopt');
    const program = (code: number) => [
      'sh',
      '-c',
      'echo before; while [ ! -f "$1" ]; do sleep 0.2; done; echo after; echo done > "$OUTPUT_DIR/out.txt"; exit "$2"',
      'w',
      release,
      String(code),
    ];
    const specs = [specOf(program(0)), specOf(program(5)), specOf(program(0))];
    const observers = specs.map(() => new Followed());
    const ids = await first.submitMany(specs, observers);
    ids.forEach((id) => slurmIds.add(id));
    await until(
      async () => observers.every((o) => o.text().includes('before')),
      (all) => all,
      60_000,
    );
    // The worker dies (stops following; the tasks run on).
    await first.close();
    expect(slurmJob(ids[0])!.state).toBe('RUNNING');

    const second = executor();
    const adopted = specs.map(() => new Followed());
    expect(await second.adopt(specs[0], ids[0], adopted[0])).toBe(ids[0]);
    expect(await second.adopt(specs[1], ids[1], adopted[1])).toBe(ids[1]);
    // Its id was never recorded: found by its array's name and its task id.
    expect(await second.adopt(specs[2], null, adopted[2])).toBe(ids[2]);
    writeFileSync(release, '');
    const exits = await Promise.all(adopted.map((o) => o.ended$));
    expect(exits.map((x) => x.exitCode)).toEqual([0, 5, 0]);
    for (const [i, o] of adopted.entries()) {
      expect(o.lines.map((l) => [l.line, l.earlier])).toEqual([
        ['before', true],
        ['after', false],
      ]);
      expect(readFileSync(path.join(specs[i].outputDir, 'out.txt'), 'utf8')).toBe('done\n');
    }
  });

  it('an adopted task that ended while no worker followed it ends with its exit status', async () => {
    const first = executor();
    const specs = [specOf(task(0, 0)), specOf(task(1, 9))];
    const observers = specs.map(() => new Followed());
    const ids = await first.submitMany(specs, observers);
    ids.forEach((id) => slurmIds.add(id));
    await first.close();
    await until(
      async () => ids.map((id) => slurmJob(id)?.state),
      (states) => states.every((s) => s === 'COMPLETED' || s === 'FAILED'),
      60_000,
    );
    const second = executor();
    const adopted = specs.map(() => new Followed());
    await second.adopt(specs[0], null, adopted[0]);
    await second.adopt(specs[1], ids[1], adopted[1]);
    const exits = await Promise.all(adopted.map((o) => o.ended$));
    expect(exits.map((x) => x.exitCode)).toEqual([0, 9]);
    expect(adopted[1].lines.filter((l) => l.stream === 'stdout')).toEqual([
      { stream: 'stdout', line: `item 1 of job ${specs[1].jobId} in ${specs[1].workDir}`, earlier: true },
    ]);
  });
});
