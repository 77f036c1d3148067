import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createLogger } from '../common/logger';
import { JOB_ENV } from './job.env';
import { LineSplitter, LocalExecutor, MAX_LINE } from './local.executor';

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
