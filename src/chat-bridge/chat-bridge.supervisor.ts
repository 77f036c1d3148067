import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import type { Logger } from '../common/logger';

export type SupervisedState = 'running' | 'restarting' | 'failed' | 'stopped';

export interface SupervisorOptions {
  /** The program and its arguments; run directly, never through a shell. */
  argv: readonly string[];
  /** Its whole environment: none of the service's own variables (secrets) is passed on. */
  env: Record<string, string>;
  cwd: string;
  /** stdout and stderr are appended here. */
  logFile: string;
  log: Logger;
  /** Waits between restarts double from `minBackoffMs` up to `maxBackoffMs`. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** An exit sooner than this after a start is a quick crash. */
  quickCrashMs?: number;
  /** After this many quick crashes in a row the supervisor gives up (state `failed`). */
  maxQuickCrashes?: number;
  /** How long `stop()` waits after SIGTERM before SIGKILL. */
  stopTimeoutMs?: number;
}

/**
 * Keeps one process running: restarts it when it exits on its own, with a capped exponential
 * backoff, and gives up after a run of quick crashes. The process leads its own process group so
 * that stopping it also stops anything it started.
 */
export class Supervisor {
  state: SupervisedState = 'stopped';
  /** Starts so far, the first included. */
  starts = 0;
  private child: ChildProcess | undefined;
  private exited: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private quickCrashes = 0;
  private readonly opts: Required<Omit<SupervisorOptions, 'log'>> & { log: Logger };

  constructor(options: SupervisorOptions) {
    this.opts = {
      minBackoffMs: 500,
      maxBackoffMs: 30_000,
      quickCrashMs: 10_000,
      maxQuickCrashes: 5,
      stopTimeoutMs: 5_000,
      ...options,
    };
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): void {
    if (this.state === 'running' || this.state === 'restarting') return;
    this.quickCrashes = 0;
    this.spawn();
  }

  /** SIGTERM to the process group, SIGKILL after `stopTimeoutMs`; resolves once it has exited. */
  async stop(): Promise<void> {
    this.state = 'stopped';
    clearTimeout(this.timer);
    const child = this.child;
    if (!child || !this.exited) return;
    this.signal(child, 'SIGTERM');
    const killer = setTimeout(() => this.signal(child, 'SIGKILL'), this.opts.stopTimeoutMs);
    await this.exited;
    clearTimeout(killer);
    // The leader is gone; members of its group that ignored SIGTERM go now.
    this.signal(child, 'SIGKILL');
  }

  private spawn(): void {
    const { argv, cwd, env, logFile, log } = this.opts;
    const fd = openSync(logFile, 'a', 0o600);
    let child: ChildProcess;
    try {
      child = spawn(argv[0], argv.slice(1), { cwd, env, detached: true, stdio: ['ignore', fd, fd] });
    } finally {
      closeSync(fd);
    }
    const startedAt = Date.now();
    this.child = child;
    this.starts++;
    this.state = 'running';
    this.exited = new Promise((resolve) => {
      let done = false;
      const onEnd = (reason: string) => {
        if (done) return;
        done = true;
        resolve();
        this.onExit(child, reason, Date.now() - startedAt);
      };
      child.once('exit', (code, signal) => onEnd(signal ? `signal ${signal}` : `code ${code}`));
      // A program that cannot be started (missing, not executable) emits only 'error'.
      child.once('error', (err) => onEnd(err.message));
    });
    log.info({ argv, pid: child.pid }, 'supervised process started');
  }

  private onExit(child: ChildProcess, reason: string, uptimeMs: number): void {
    if (this.child !== child || this.state === 'stopped') return;
    const { log, argv } = this.opts;
    this.signal(child, 'SIGKILL'); // what it started must not outlive it
    this.quickCrashes = uptimeMs < this.opts.quickCrashMs ? this.quickCrashes + 1 : 1;
    if (this.quickCrashes >= this.opts.maxQuickCrashes) {
      this.state = 'failed';
      log.error({ argv, reason, crashes: this.quickCrashes }, 'supervised process keeps crashing; gave up');
      return;
    }
    const delay = Math.min(this.opts.maxBackoffMs, this.opts.minBackoffMs * 2 ** (this.quickCrashes - 1));
    this.state = 'restarting';
    log.warn({ argv, reason, restartInMs: delay }, 'supervised process exited; restarting');
    this.timer = setTimeout(() => {
      if (this.state === 'restarting') this.spawn();
    }, delay);
  }

  private signal(child: ChildProcess, signal: NodeJS.Signals): void {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // The group is already gone.
    }
  }
}

/** Supervisors by key; stops them all on shutdown. */
export class SupervisorGroup {
  private readonly supervisors = new Map<string, Supervisor>();

  start(key: string, options: SupervisorOptions): Supervisor {
    const existing = this.supervisors.get(key);
    if (existing) return existing;
    const supervisor = new Supervisor(options);
    this.supervisors.set(key, supervisor);
    supervisor.start();
    return supervisor;
  }

  get(key: string): Supervisor | undefined {
    return this.supervisors.get(key);
  }

  async stop(key: string): Promise<void> {
    const supervisor = this.supervisors.get(key);
    this.supervisors.delete(key);
    await supervisor?.stop();
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.supervisors.keys()].map((key) => this.stop(key)));
  }
}
