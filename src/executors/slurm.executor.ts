import { mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { SlurmContainerRuntime } from '../config';
import type { Logger } from '../common/logger';
import type { MachineTypes } from '../common/machine-types';
import { ExecutorUnavailableError, type Executor, type JobObserver, type JobSpec } from './executor.port';
import { jobEnvironment } from './job.env';
import { Limiter, SlurmCommands } from './slurm.command';
import {
  exitOf,
  JOB_FILES_DIR,
  jobNameOf,
  pendingReasonOf,
  phaseOf,
  sbatchArgs,
  type QueuedJob,
  type SlurmGovernance,
} from './slurm.sbatch';
import { newTracked, type Tracked } from './slurm.tracked';

export interface SlurmExecutorOptions {
  /** PATH of the jobs, and where the worker finds sbatch, squeue, scancel. */
  path: string;
  /** Slurm's SLURM_CONF for its commands, when not the default. */
  slurmConf: string | undefined;
  pollSeconds: number;
  runtime: SlurmContainerRuntime;
  machineTypes: MachineTypes | null;
  /** Program names resolved by the service itself (`media-demo` -> node + its script). */
  programs: Record<string, string[]>;
  /** The batch script (slurm.job.sh). */
  script: string;
  /** Owners' accounts and priorities' QOS (docs/governance.md). */
  governance?: SlurmGovernance;
  log: Logger;
  /** How often the files of running jobs are read (log lines, exit status). */
  filePollMs?: number;
  /** sbatch and scancel processes at once: a burst of deployments does not fork a burst. */
  commandConcurrency?: number;
}

/** Jobs asked about per squeue call (its --jobs list is one argument, at most 128 KiB). */
const SQUEUE_BATCH = 10_000;
/** Polls a job may be missing from squeue before the worker looks elsewhere (its files, sacct). */
const MISSING_POLLS = 2;
/** How soon after a submission the job is first looked at. */
const FIRST_LOOK_MS = 50;
/** How soon a timeout's scancel is tried again when the controller could not be reached. */
const CANCEL_RETRY_MS = 5_000;

/**
 * Runs jobs on a Slurm cluster through its command-line tools. Each job is one `sbatch` of the
 * service's fixed batch script (slurm.job.sh) with the job's argv as the script's arguments,
 * named after our job id, in the job's directory under JOBS_DIR (shared with the compute nodes).
 * One loop follows every job of this worker: one `squeue` per poll for all of them, and their
 * output files read every `filePollMs`. Jobs outlive the worker: any worker can adopt them.
 */
export class SlurmExecutor implements Executor {
  readonly name = 'slurm';
  readonly detached = true;
  /** By Slurm job id. */
  private readonly jobs = new Map<string, Tracked>();
  private readonly commands: Limiter;
  private readonly slurm: SlurmCommands;
  private pollTimer: NodeJS.Timeout | null = null;
  private readonly fileTimer: NodeJS.Timeout;
  private polling: Promise<void> | null = null;
  private pollAgain = false;
  /** A submission waits for its first look: the next poll comes soon after this one. */
  private lookAgain = false;
  /** When the scheduled poll is due (ms since the epoch); Infinity when none is. */
  private pollDueAt = Infinity;
  private reading = false;
  private closed = false;
  private squeueFailing = false;

  constructor(private readonly opts: SlurmExecutorOptions) {
    this.commands = new Limiter(opts.commandConcurrency ?? 4);
    this.slurm = new SlurmCommands(opts);
    this.fileTimer = setInterval(() => void this.readFiles(), opts.filePollMs ?? 500);
    this.fileTimer.unref();
    this.schedulePoll(opts.pollSeconds * 1000);
  }

  /** The most sbatch and scancel processes that ran at once (the benchmark and tests read it). */
  get peakCommands(): number {
    return this.commands.peak;
  }

  async submit(spec: JobSpec, observer: JobObserver, retry = false): Promise<string> {
    if (this.closed) throw new Error('the executor is shutting down');
    // An earlier sbatch may have reached the controller after all (its answer lost): that job
    // is the one, found by its name, rather than a second one.
    const earlier = retry ? await this.findByName(spec.jobId) : null;
    if (earlier) return this.track(spec, earlier, observer);
    const args = sbatchArgs(spec, {
      script: this.opts.script,
      runtime: this.opts.runtime,
      machineTypes: this.opts.machineTypes,
      programs: this.opts.programs,
      governance: this.opts.governance,
    });
    // Slurm opens the output files there before the script runs.
    mkdirSync(path.join(spec.workDir, JOB_FILES_DIR), { recursive: true });
    const out = await this.commands
      .run(() =>
        // The job's whole environment (sbatch --export=ALL): none of the service's own variables.
        this.slurm.run('sbatch', args, jobEnvironment(spec, this.opts.path)),
      )
      .catch((err: Error) => {
        const message = `could not submit the job to Slurm: ${err.message
          .split('\n')
          .at(-1)!
          .replace(/^(sbatch: )?(error: )?/, '')}`;
        throw err instanceof ExecutorUnavailableError
          ? new ExecutorUnavailableError(message)
          : new Error(message);
      });
    const externalId = out.trim().split(';')[0];
    if (!/^\d+$/.test(externalId)) throw new Error(`sbatch answered "${out.trim()}", not a job id`);
    return this.track(spec, externalId, observer);
  }

  private track(spec: JobSpec, externalId: string, observer: JobObserver): string {
    this.jobs.set(externalId, { ...newTracked(spec, externalId, observer), submittedAt: Date.now() });
    this.lookSoon();
    return externalId;
  }

  /** The Slurm job carrying our job id in its name (the first, should there be several). */
  private async findByName(jobId: string): Promise<string | null> {
    const found = await this.slurm.squeue([`--name=${jobNameOf(jobId)}`]);
    return found.map((j) => j.id).sort((a, b) => Number(a) - Number(b))[0] ?? null;
  }

  async adopt(spec: JobSpec, externalId: string | null, observer: JobObserver): Promise<string | null> {
    // Its submission was never recorded: the job carries our id in its name.
    externalId ??= await this.findByName(spec.jobId);
    const tracked = newTracked(spec, externalId ?? '', observer);
    // What it printed so far was shown by the worker that followed it before.
    for (const file of Object.values(tracked.files)) file.earlier = true;
    await Promise.all(Object.values(tracked.files).map((f) => f.read()));
    for (const file of Object.values(tracked.files)) file.earlier = false;
    if (!externalId) {
      // Not in the queue: it ended long ago (its exit status tells how) or never reached Slurm.
      if ((await this.exitStatus(tracked)) !== null) observer.running([]);
      await this.end(tracked, null);
      return null;
    }
    this.jobs.set(externalId, tracked);
    this.pollSoon();
    return externalId;
  }

  async cancel(externalId: string): Promise<void> {
    const tracked = this.jobs.get(externalId);
    if (tracked) tracked.stoppedBy ??= 'canceled';
    await this.scancel(externalId);
  }

  async stopOrphan(): Promise<boolean> {
    return false; // Slurm jobs are adopted, never orphaned.
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.fileTimer);
    if (this.pollTimer) clearTimeout(this.pollTimer);
    await this.polling;
    for (const t of this.jobs.values()) if (t.timer) clearTimeout(t.timer);
    this.jobs.clear();
  }

  /** Fails only when the controller cannot be reached (ExecutorUnavailableError). */
  private async scancel(externalId: string): Promise<void> {
    try {
      await this.commands.run(() => this.slurm.run('scancel', [externalId]));
    } catch (err) {
      if (err instanceof ExecutorUnavailableError) throw err;
      // A job that has ended is not an error; anything else is worth a word.
      if (!/already completing or completed|Invalid job id/i.test((err as Error).message))
        this.opts.log.warn({ err, externalId }, 'scancel failed');
    }
    this.pollSoon();
  }

  private schedulePoll(ms: number): void {
    if (this.closed) return;
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.pollDueAt = Date.now() + ms;
    this.pollTimer = setTimeout(() => {
      this.pollTimer = null;
      this.pollDueAt = Infinity;
      this.polling = this.poll()
        .catch((err) => this.opts.log.warn({ err }, 'following Slurm jobs failed'))
        .finally(() => {
          this.polling = null;
          const next = this.pollAgain ? 0 : this.lookAgain ? FIRST_LOOK_MS : this.nextLookMs();
          this.pollAgain = this.lookAgain = false;
          this.schedulePoll(next);
        });
    }, ms);
    this.pollTimer.unref();
  }

  /** A change is expected (a job adopted, canceled): poll soon rather than at the next round. */
  private pollSoon(): void {
    if (this.polling) this.pollAgain = true;
    else this.schedulePoll(200);
  }

  /**
   * A job was just submitted: Slurm usually starts a job on free nodes at once, so it is looked
   * at soon rather than at the next round (SLURM_POLL_SECONDS). A poll due sooner is not
   * postponed, and the jobs of a burst of submissions share one look.
   */
  private lookSoon(): void {
    if (this.polling) this.lookAgain = true;
    else if (this.pollDueAt > Date.now() + FIRST_LOOK_MS) this.schedulePoll(FIRST_LOOK_MS);
  }

  /**
   * The regular round, or sooner while a job this worker just submitted is still pending: looked
   * at again after as long as it has waited (50, 100, 200 ms...), so that it is seen running at
   * most about twice as late as it started, and the controller is asked a few more times only.
   */
  private nextLookMs(): number {
    const round = this.opts.pollSeconds * 1000;
    let youngest = Infinity;
    for (const t of this.jobs.values())
      if (t.phase === 'pending' && t.submittedAt !== null)
        youngest = Math.min(youngest, Date.now() - t.submittedAt);
    return youngest < round ? Math.min(round, Math.max(FIRST_LOOK_MS, youngest)) : round;
  }

  /** One squeue per poll (per SQUEUE_BATCH jobs) for every job this worker follows. */
  private async poll(): Promise<void> {
    const live = [...this.jobs.values()].filter((t) => t.phase !== 'ending');
    if (!live.length) return;
    const queued = new Map<string, QueuedJob>();
    try {
      for (let i = 0; i < live.length; i += SQUEUE_BATCH) {
        const ids = live.slice(i, i + SQUEUE_BATCH).map((t) => t.externalId);
        for (const job of await this.slurm.squeue([`--jobs=${ids.join(',')}`])) queued.set(job.id, job);
      }
      if (this.squeueFailing) this.opts.log.info('squeue answers again');
      this.squeueFailing = false;
    } catch (err) {
      // The controller is unreachable: nothing is known, so nothing changes but the reason why
      // a pending job waits (replaced by Slurm's own once squeue answers).
      if (!this.squeueFailing) this.opts.log.warn({ err }, 'squeue failed; Slurm jobs keep their state');
      this.squeueFailing = true;
      if (err instanceof ExecutorUnavailableError)
        for (const t of live)
          if (t.phase === 'pending' && t.reason !== err.message) t.observer.pending((t.reason = err.message));
      return;
    }
    const missing: Tracked[] = [];
    for (const t of live) {
      const job = queued.get(t.externalId);
      if (!job) {
        missing.push(t);
        continue;
      }
      t.missing = 0;
      const phase = phaseOf(job.state);
      if (phase === 'pending') {
        const reason = pendingReasonOf(job);
        if (reason !== t.reason) {
          t.reason = reason;
          t.observer.pending(reason);
        }
      } else {
        // A job that ran and ended between two polls has run all the same.
        if (job.startedAt !== null || phase === 'running') this.started(t, job);
        if (phase === 'ended') void this.end(t, job.state);
      }
    }
    if (missing.length) await this.vanished(missing);
  }

  /** Jobs squeue no longer shows: their exit status, or accounting, or they are lost. */
  private async vanished(jobs: Tracked[]): Promise<void> {
    const unknown: Tracked[] = [];
    for (const t of jobs) {
      if ((await this.exitStatus(t)) !== null) {
        if (t.phase === 'pending') this.started(t, null);
        void this.end(t, null);
      } else if (++t.missing >= MISSING_POLLS) unknown.push(t);
    }
    if (!unknown.length || !(await this.slurm.hasAccounting())) {
      for (const t of unknown) void this.end(t, null);
      return;
    }
    const known = await this.slurm.sacct(unknown.map((t) => t.externalId));
    for (const t of unknown) {
      const job = known.get(t.externalId);
      void this.end(t, job?.state ?? null, job?.exitCode ?? null);
    }
  }

  private started(t: Tracked, job: QueuedJob | null): void {
    if (t.phase !== 'pending') return;
    t.phase = 'running';
    t.observer.running(job?.nodes ?? []);
    // The worker's guard at the exact second; Slurm's own limit (whole minutes) is behind it.
    const since = job?.startedAt ? job.startedAt * 1000 : Date.now();
    t.timer = setTimeout(() => this.timedOut(t), Math.max(0, since + t.timeoutSeconds * 1000 - Date.now()));
    t.timer.unref();
  }

  private timedOut(t: Tracked): void {
    if (t.phase === 'ending') return;
    t.stoppedBy ??= 'timeout';
    this.scancel(t.externalId).catch((err) => {
      // The controller cannot be reached: stopped as soon as it answers (Slurm's limit is behind).
      this.opts.log.warn(
        { err, externalId: t.externalId },
        'could not stop a job past its timeout; trying again',
      );
      t.timer = setTimeout(() => this.timedOut(t), CANCEL_RETRY_MS);
      t.timer.unref();
    });
  }

  /** Reads what running jobs printed; a job whose exit status is written has ended. */
  private async readFiles(): Promise<void> {
    if (this.reading) return;
    this.reading = true;
    try {
      const running = [...this.jobs.values()].filter((t) => t.phase === 'running');
      await Promise.all(
        running.map(async (t) => {
          await Promise.all([t.files.stdout.read(), t.files.stderr.read()]);
          if ((await this.exitStatus(t)) !== null) await this.end(t, null);
        }),
      );
    } catch (err) {
      this.opts.log.warn({ err }, 'reading the output of Slurm jobs failed');
    } finally {
      this.reading = false;
    }
  }

  private async exitStatus(t: Tracked): Promise<number | null> {
    const text = await readFile(path.join(t.dir, JOB_FILES_DIR, 'exit'), 'utf8').catch(() => '');
    return /^\d+\s*$/.test(text) ? Number(text) : null;
  }

  /** The job ended (`state`: Slurm's end state, null when not known): last lines, then its end. */
  private async end(t: Tracked, state: string | null, accounted: number | null = null): Promise<void> {
    if (t.phase === 'ending') return;
    t.phase = 'ending';
    if (t.timer) clearTimeout(t.timer);
    try {
      await Promise.all([t.files.stdout.read(), t.files.stderr.read()]);
    } catch (err) {
      this.opts.log.warn({ err, externalId: t.externalId }, 'could not read the last output of a Slurm job');
    }
    t.files.stdout.end();
    t.files.stderr.end();
    const exitCode = (await this.exitStatus(t)) ?? accounted;
    if (this.jobs.get(t.externalId) === t) this.jobs.delete(t.externalId);
    const exit = exitOf(state, exitCode, t.stoppedBy, t.timeoutSeconds);
    if (exit.reason === 'lost')
      exit.detail = t.externalId
        ? `the cluster no longer knows Slurm job ${t.externalId}; nothing of it is left to follow`
        : 'the job is not on the cluster: its submission was interrupted, or it left the queue long ago';
    t.observer.ended(exit);
  }
}
