import { spawn, type ChildProcess } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { Logger } from '../common/logger';
import type { Executor, JobExit, JobSpec, LogStream, RunningJob } from './executor.port';

export interface LocalExecutorOptions {
  concurrency: number;
  /** PATH of the jobs' processes. */
  path: string;
  /** Program names resolved by the service itself (`media-demo` -> node + its script). */
  programs: Record<string, string[]>;
  log: Logger;
  /** Time between SIGTERM and SIGKILL when a job is stopped. */
  killGraceMs?: number;
}

/** Longer output lines are cut here: a program without newlines must not grow memory. */
export const MAX_LINE = 8192;
/** Environment marker that ties a process (and its children) to its job, across restarts. */
export const JOB_ENV = 'MEDIA_JOB_ID';

interface Running {
  child: ChildProcess;
  reason: JobExit['reason'];
  stop(reason: 'timeout' | 'canceled'): void;
  finished: Promise<JobExit>;
}

/**
 * Runs each job as a child process of this service, in its own process group, with a minimal
 * environment (no service secrets), its work directory as cwd and HOME, a timeout that stops the
 * whole group, and at most `concurrency` jobs at once.
 */
export class LocalExecutor implements Executor {
  readonly name = 'local';
  private readonly running = new Map<string, Running>();
  private active = 0;
  private readonly waiters: (() => void)[] = [];

  constructor(private readonly opts: LocalExecutorOptions) {}

  async submit(spec: JobSpec, onLine: (stream: LogStream, line: string) => void): Promise<RunningJob> {
    await this.acquire();
    const [program, ...args] = spec.argv;
    const [command, ...prefix] = this.opts.programs[program] ?? [program];
    let child: ChildProcess;
    try {
      child = spawn(command, [...prefix, ...args], {
        cwd: spec.workDir,
        detached: true, // its own process group, so the whole tree can be stopped
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          PATH: this.opts.path,
          HOME: spec.workDir,
          TMPDIR: spec.workDir,
          LANG: 'C.UTF-8',
          ...spec.env,
          OUTPUT_DIR: spec.outputDir,
          [JOB_ENV]: spec.jobId,
        },
      });
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      });
    } catch (err) {
      this.release();
      throw new Error(`cannot start ${JSON.stringify(program)}: ${(err as Error).message}`);
    }
    const pid = child.pid!;
    const lines = Promise.all([
      splitLines(child.stdout!, (l) => onLine('stdout', l)),
      splitLines(child.stderr!, (l) => onLine('stderr', l)),
    ]);
    const grace = this.opts.killGraceMs ?? 5000;
    const running: Running = {
      child,
      reason: null,
      stop: (reason) => {
        running.reason ??= reason;
        killGroup(pid, 'SIGTERM');
        setTimeout(() => killGroup(pid, 'SIGKILL'), grace).unref();
      },
      finished: new Promise<JobExit>((resolve) => {
        child.once('exit', (code, signal) => {
          // What the program left running in its group goes with it; then the pipes close.
          killGroup(pid, 'SIGKILL');
          void lines.finally(() => resolve({ exitCode: code, signal, reason: running.reason }));
        });
      }),
    };
    const timer = setTimeout(() => running.stop('timeout'), spec.timeoutSeconds * 1000);
    timer.unref();
    this.running.set(String(pid), running);
    void running.finished.finally(() => {
      clearTimeout(timer);
      this.running.delete(String(pid));
      this.release();
    });
    return { externalId: String(pid), finished: running.finished };
  }

  async cancel(externalId: string): Promise<void> {
    this.running.get(externalId)?.stop('canceled');
  }

  async stopOrphan(jobId: string, externalId: string): Promise<boolean> {
    const pgid = Number(externalId);
    if (!Number.isSafeInteger(pgid) || pgid <= 1 || this.running.has(externalId)) return false;
    // Only a group some process of which still carries this job's marker is ours to stop.
    for (const entry of await readdir('/proc').catch(() => [] as string[])) {
      if (!/^\d+$/.test(entry)) continue;
      const [stat, environ] = await Promise.all([
        readFile(`/proc/${entry}/stat`, 'utf8').catch(() => ''),
        readFile(`/proc/${entry}/environ`, 'utf8').catch(() => ''),
      ]);
      // Fields after the `(comm)`: state, ppid, pgrp.
      const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
      if (pgrp === pgid && environ.split('\0').includes(`${JOB_ENV}=${jobId}`)) {
        killGroup(pgid, 'SIGKILL');
        return true;
      }
    }
    return false;
  }

  async close(): Promise<void> {
    const all = [...this.running.values()];
    for (const r of all) r.stop('canceled');
    await Promise.all(all.map((r) => r.finished));
  }

  private acquire(): Promise<void> {
    if (this.active < this.opts.concurrency) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.active--;
  }
}

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

/** Calls `onLine` for each line of a stream (without the newline); lines are cut at MAX_LINE. */
export function splitLines(stream: Readable, onLine: (line: string) => void): Promise<void> {
  let partial = '';
  stream.setEncoding('utf8');
  return new Promise((resolve) => {
    stream.on('data', (chunk: string) => {
      let text = partial + chunk;
      let nl: number;
      while ((nl = text.indexOf('\n')) !== -1) {
        onLine(text.slice(0, Math.min(nl, MAX_LINE)).replace(/\r$/, ''));
        text = text.slice(nl + 1);
      }
      // A line longer than MAX_LINE keeps only its start; the rest is dropped up to the newline.
      partial = text.length > MAX_LINE ? text.slice(0, MAX_LINE) : text;
    });
    const end = () => {
      if (partial) onLine(partial);
      partial = '';
      resolve();
    };
    stream.once('end', end);
    stream.once('error', end);
  });
}
