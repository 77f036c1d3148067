import { spawn, type ChildProcess } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import type { Logger } from '../common/logger';
import type { Executor, JobExit, JobObserver, JobSpec, LogStream } from './executor.port';
import { JOB_ENV, jobEnvironment } from './job.env';
import type { JobLimits } from './job-limits';
import type { LauncherMessage, SpawnRequest } from './launcher';
import { LineSplitter } from './line-splitter';

export { LineSplitter, MAX_LINE } from './line-splitter';

export interface LocalExecutorOptions {
  concurrency: number;
  /** PATH of the jobs' processes. */
  path: string;
  /** Program names resolved by the service itself (`media-demo` -> node + its script). */
  programs: Record<string, string[]>;
  /** The command that starts the launcher (launcher.ts). */
  launcher: string[];
  log: Logger;
  /** Time between SIGTERM and SIGKILL when a job is stopped. */
  killGraceMs?: number;
  /** Per job (job-limits.ts); absent: none. */
  limits?: JobLimits;
}

/** How programs say that no more files could be opened (strerror(EMFILE), Node's code). */
const OPEN_FILES_LIMIT = /\bEMFILE\b|too many open files/i;

interface Running {
  /** The launcher that started it; if that one dies, so does the job. */
  launcher: ChildProcess | null;
  pid: number | null;
  reason: JobExit['reason'];
  /** It printed that it could not open more files. */
  sawOpenFilesLimit: boolean;
  lines: Record<LogStream, LineSplitter>;
  spawned: { resolve: (pid: number) => void; reject: (err: Error) => void };
  end: (exit: JobExit) => void;
  finished: Promise<JobExit>;
}

/** The error of a job this executor gave up before starting it, as the worker shut down. */
export const NEVER_STARTED = 'the worker shut down before the job started; it never ran';

/**
 * Runs each job as a process on this host, in its own process group, with a minimal environment
 * (no service secrets), its work directory as cwd and HOME, a timeout that stops the whole group,
 * and at most `concurrency` jobs at once. Processes are started by the launcher (launcher.ts), a
 * small resident process, because forking the service itself is slow; the service stops a job by
 * signalling its process group directly.
 */
export class LocalExecutor implements Executor {
  readonly name = 'local';
  /** A job's output pipes end with the process that started it: nothing can adopt it. */
  readonly detached = false;
  private launcher: ChildProcess | null = null;
  /** By job id. */
  private readonly running = new Map<string, Running>();
  private active = 0;
  private readonly waiters: (() => void)[] = [];
  private closed = false;

  constructor(private readonly opts: LocalExecutorOptions) {}

  async submit(spec: JobSpec, observer: JobObserver): Promise<string> {
    const [program, ...args] = spec.argv;
    // Own keys only: a program named `constructor` is just a program of that name.
    const [command, ...prefix] = Object.hasOwn(this.opts.programs, program)
      ? this.opts.programs[program]
      : [program];
    // Closed already (the worker shuts down as it submits a job it claimed): no slot is taken.
    const slot = !this.closed;
    if (slot) await this.acquire();
    if (this.closed || observer.abandoned?.()) {
      if (slot) this.release();
      // Closed: the worker shuts down; the job never ran (its retry is not counted, JobStore).
      const never = this.closed ? { detail: NEVER_STARTED, neverRan: true } : {};
      observer.ended({ exitCode: null, signal: null, reason: 'canceled', ...never });
      return '';
    }
    let spawned!: Running['spawned'];
    let end!: Running['end'];
    const line = (stream: LogStream) => (l: string) => {
      if (!job.sawOpenFilesLimit && OPEN_FILES_LIMIT.test(l)) job.sawOpenFilesLimit = true;
      observer.line(stream, l);
    };
    const job: Running = {
      launcher: null,
      pid: null,
      reason: null,
      sawOpenFilesLimit: false,
      lines: { stdout: new LineSplitter(line('stdout')), stderr: new LineSplitter(line('stderr')) },
      spawned: null as never,
      end: null as never,
      finished: new Promise<JobExit>((resolve) => (end = resolve)),
    };
    const pid = new Promise<number>((resolve, reject) => (spawned = { resolve, reject }));
    Object.assign(job, { spawned, end });
    this.running.set(spec.jobId, job);
    void job.finished.finally(() => {
      this.running.delete(spec.jobId);
      this.release();
    });

    const request: SpawnRequest = {
      type: 'spawn',
      id: spec.jobId,
      command,
      args: [...prefix, ...args],
      cwd: spec.workDir,
      env: jobEnvironment(spec, this.opts.path),
      limits: this.opts.limits,
    };
    try {
      job.launcher = this.ensureLauncher();
      job.launcher.send(request, (err) => err && job.spawned.reject(err));
      job.pid = await pid;
    } catch (err) {
      job.end({ exitCode: null, signal: null, reason: null });
      throw new Error(`cannot start ${JSON.stringify(program)}: ${(err as Error).message}`);
    }
    const timer = setTimeout(() => this.stop(job, 'timeout'), spec.timeoutSeconds * 1000);
    timer.unref();
    void job.finished.then((exit) => {
      clearTimeout(timer);
      observer.ended(exit);
    });
    observer.running([hostname()]);
    return String(job.pid);
  }

  async adopt(): Promise<string | null> {
    throw new Error('a local job cannot be followed by another process');
  }

  async cancel(externalId: string): Promise<void> {
    for (const job of this.running.values()) if (String(job.pid) === externalId) this.stop(job, 'canceled');
  }

  async stopOrphan(jobId: string, externalId: string | null): Promise<boolean> {
    const pgid = externalId === null ? null : Number(externalId);
    if ((pgid !== null && (!Number.isSafeInteger(pgid) || pgid <= 1)) || this.running.has(jobId))
      return false;
    // Only a group some process of which still carries this job's marker is ours to stop. Without
    // a recorded id (its worker died while it was starting, after the spawn), every such group.
    const groups = new Set<number>();
    for (const entry of await readdir('/proc').catch(() => [] as string[])) {
      if (!/^\d+$/.test(entry)) continue;
      const [stat, environ] = await Promise.all([
        readFile(`/proc/${entry}/stat`, 'utf8').catch(() => ''),
        readFile(`/proc/${entry}/environ`, 'utf8').catch(() => ''),
      ]);
      if (!environ.split('\0').includes(`${JOB_ENV}=${jobId}`)) continue;
      // Fields after the `(comm)`: state, ppid, pgrp.
      const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
      if (pgid === null ? pgrp > 1 : pgrp === pgid) groups.add(pgrp);
    }
    for (const group of groups) killGroup(group, 'SIGKILL');
    return groups.size > 0;
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.running.values()];
    for (const job of all) this.stop(job, 'canceled');
    await Promise.all(all.map((j) => j.finished));
    const launcher = this.launcher;
    this.launcher = null;
    if (launcher && launcher.exitCode === null) {
      const gone = new Promise((r) => launcher.once('exit', r));
      launcher.disconnect();
      await gone;
    }
  }

  private stop(job: Running, reason: 'timeout' | 'canceled'): void {
    if (job.pid === null) return;
    job.reason ??= reason;
    const pid = job.pid;
    killGroup(pid, 'SIGTERM');
    // Cleared once the job ended, so a later process that reuses the id is never hit.
    const kill = setTimeout(() => killGroup(pid, 'SIGKILL'), this.opts.killGraceMs ?? 5000);
    kill.unref();
    void job.finished.finally(() => clearTimeout(kill));
  }

  private ensureLauncher(): ChildProcess {
    if (this.launcher?.connected) return this.launcher;
    const [command, ...args] = this.opts.launcher;
    const launcher = spawn(command, args, {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { PATH: this.opts.path },
    });
    launcher.on('message', (m: LauncherMessage) => this.onMessage(m));
    launcher.on('error', (err) => this.opts.log.error({ err }, 'the job launcher failed'));
    launcher.once('exit', (code, signal) => this.lost(launcher, code, signal));
    this.launcher = launcher;
    return launcher;
  }

  private onMessage(m: LauncherMessage): void {
    const job = this.running.get(m.id);
    if (!job) return;
    switch (m.type) {
      case 'spawned':
        return job.spawned.resolve(m.pid);
      case 'failed':
        return job.spawned.reject(new Error(m.message));
      case 'output':
        return job.lines[m.stream].push(m.chunk);
      case 'exit':
        job.lines.stdout.end();
        job.lines.stderr.end();
        return job.end({
          exitCode: m.code,
          signal: m.signal,
          reason: job.reason,
          detail: job.reason ? undefined : this.limitError(m, job),
        });
    }
  }

  /**
   * Why a job failed when a limit was the cause: the watch stopped it, or the program failed at
   * its memory limit (allocations refused) or after it could open no more files.
   */
  private limitError(m: Extract<LauncherMessage, { type: 'exit' }>, job: Running): string | undefined {
    const limits = this.opts.limits;
    if (!limits) return undefined;
    const mb = Math.round(limits.memoryBytes / 1024 / 1024);
    if (m.limits?.exceeded === 'memory')
      return `the job used more than its memory limit of ${mb} MB (LOCAL_EXECUTOR_MEMORY_MB); its processes were stopped`;
    if (m.limits?.exceeded === 'processes')
      return `the job ran more than ${limits.processes} processes (LOCAL_EXECUTOR_MAX_PROCESSES); its processes were stopped`;
    if (m.code === 0) return undefined;
    const how = m.code === null ? `was killed by ${m.signal}` : `exited with code ${m.code}`;
    const margin = Math.min(64 * 1024 * 1024, limits.memoryBytes / 4);
    if (limits.memoryBytes && (m.limits?.peakDataBytes ?? 0) >= limits.memoryBytes - margin)
      return `the program ${how} at its memory limit of ${mb} MB (LOCAL_EXECUTOR_MEMORY_MB): it most likely ran out of memory`;
    if (limits.openFiles && job.sawOpenFilesLimit)
      return `the program ${how} after reaching its limit of ${limits.openFiles} open files (LOCAL_EXECUTOR_MAX_OPEN_FILES)`;
    return undefined;
  }

  /** The launcher died: its jobs cannot be followed any more, so they are stopped and end. */
  private lost(launcher: ChildProcess, code: number | null, signal: string | null): void {
    if (this.launcher === launcher) this.launcher = null;
    if (![...this.running.values()].some((j) => j.launcher === launcher)) return;
    this.opts.log.error({ code, signal }, 'the job launcher stopped; its jobs are stopped too');
    for (const job of this.running.values()) {
      if (job.launcher !== launcher) continue;
      job.spawned.reject(new Error('the job launcher stopped'));
      if (job.pid !== null) killGroup(job.pid, 'SIGKILL');
      job.end({ exitCode: null, signal: null, reason: 'lost' });
    }
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
