import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../common/logger';
import type { JobExit, JobObserver, JobSpec } from './executor.port';
import { JOB_ENV } from './job.env';
import { LineSplitter, LocalExecutor, MAX_LINE, NEVER_STARTED } from './local.executor';

function linesOf(chunks: string[]): string[] {
  const lines: string[] = [];
  const splitter = new LineSplitter((l) => lines.push(l));
  for (const c of chunks) splitter.push(c);
  splitter.end();
  return lines;
}

describe('LineSplitter', () => {
  it('joins lines split across chunks and drops CR before LF', () => {
    expect(linesOf(['one\r\ntw', 'o\nthr', 'ee'])).toEqual(['one', 'two', 'three']);
  });

  it('cuts a line longer than MAX_LINE without holding the excess', () => {
    const long = 'x'.repeat(MAX_LINE * 3);
    const lines = linesOf([long.slice(0, MAX_LINE * 2), long.slice(MAX_LINE * 2), '\nnext\n']);
    expect(lines).toEqual(['x'.repeat(MAX_LINE), 'next']);
  });

  it('keeps empty lines', () => {
    expect(linesOf(['a\n\nb\n'])).toEqual(['a', '', 'b']);
  });
});

describe('LocalExecutor.stopOrphan', () => {
  const executor = new LocalExecutor({
    concurrency: 1,
    path: '/usr/bin:/bin',
    programs: {},
    launcher: [],
    log: createLogger('silent'),
  });
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  it('stops the processes of a job whose id was never recorded (its worker died while it started)', async () => {
    const jobId = randomUUID();
    // A job started as the launcher starts one: its own process group, carrying the job's marker.
    const child = spawn(process.execPath, ['-e', 'setInterval(() => undefined, 1000)'], {
      detached: true,
      stdio: 'ignore',
      env: { [JOB_ENV]: jobId },
    });
    const exited = new Promise((r) => child.once('exit', r));
    await new Promise((r) => child.once('spawn', r));
    try {
      expect(await executor.stopOrphan(randomUUID(), null)).toBe(false); // another job's: untouched
      expect(alive(child.pid!)).toBe(true);
      expect(await executor.stopOrphan(jobId, null)).toBe(true);
      await exited;
      expect(alive(child.pid!)).toBe(false);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});

describe('LocalExecutor, a job held back for room', () => {
  const launcher = [
    process.execPath,
    '-r',
    require.resolve('@swc-node/register'),
    path.join(__dirname, 'launcher.ts'),
  ];
  const spec = (argv: string[]): JobSpec => ({
    jobId: randomUUID(),
    owner: { type: 'user', id: randomUUID() },
    argv,
    env: {},
    container: 'local',
    machineType: 'cpu',
    machineCount: 1,
    timeoutSeconds: 60,
    inputs: [],
    workDir: os.tmpdir(),
    outputDir: os.tmpdir(),
  });
  const oneAtATime = () =>
    new LocalExecutor({
      concurrency: 1,
      path: '/usr/bin:/bin',
      programs: {},
      launcher,
      log: createLogger('silent'),
    });
  /** An observer recording what it is told; `abandoned` answers `gone`. */
  const observer = () => {
    const told: string[] = [];
    let end!: (exit: JobExit) => void;
    const ended = new Promise<JobExit>((resolve) => (end = resolve));
    const state = { gone: false };
    const observer: JobObserver = {
      pending: () => told.push('pending'),
      running: () => told.push('running'),
      line: (_, l) => told.push(l),
      ended: (exit) => {
        told.push('ended');
        end(exit);
      },
      abandoned: () => state.gone,
    };
    return { state, told, ended, observer };
  };

  it('never starts once it need not (canceled while it waited), and ends as canceled; the next one runs', async () => {
    const executor = oneAtATime();
    try {
      const [first, held, next] = [observer(), observer(), observer()];
      await executor.submit(spec(['sh', '-c', 'sleep 0.3; echo first']), first.observer);
      const heldId = executor.submit(spec(['sh', '-c', 'echo held']), held.observer);
      const nextId = executor.submit(spec(['sh', '-c', 'echo next']), next.observer);
      held.state.gone = true;
      expect(await heldId).toBe('');
      expect(await held.ended).toEqual({ exitCode: null, signal: null, reason: 'canceled' });
      expect(held.told).toEqual(['ended']);
      expect(await nextId).not.toBe('');
      expect((await next.ended).exitCode).toBe(0);
      // (A line may come before `running` is told: both arrive in one read of the launcher's pipe.)
      expect(next.told.sort()).toEqual(['ended', 'next', 'running']);
      expect(first.told.sort()).toEqual(['ended', 'first', 'running']);
    } finally {
      await executor.close();
    }
  });

  it('never starts when the executor closed while it waited', async () => {
    const executor = oneAtATime();
    const [first, held] = [observer(), observer()];
    await executor.submit(spec(['sleep', '30']), first.observer);
    const heldId = executor.submit(spec(['sh', '-c', 'echo held']), held.observer);
    await executor.close();
    expect((await first.ended).reason).toBe('canceled');
    expect(await heldId).toBe('');
    expect(held.told).toEqual(['ended']);
    // Its error says it never ran (the one that ran has the shutdown's usual error).
    expect(await held.ended).toEqual({
      exitCode: null,
      signal: null,
      reason: 'canceled',
      detail: NEVER_STARTED,
      neverRan: true,
    });
    expect((await first.ended).detail).toBeUndefined();
  });

  it('never starts one submitted once the executor closed, and says so the same way', async () => {
    const executor = oneAtATime();
    await executor.close();
    const late = observer();
    expect(await executor.submit(spec(['sh', '-c', 'echo late']), late.observer)).toBe('');
    expect(await late.ended).toMatchObject({ reason: 'canceled', detail: NEVER_STARTED, neverRan: true });
    expect(late.told).toEqual(['ended']);
  });
});
