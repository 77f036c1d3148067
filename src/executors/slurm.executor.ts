import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { mkdir, readFile, rm, rmdir, symlink, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { SlurmContainerRuntime } from '../config';
import type { Logger } from '../common/logger';
import type { MachineTypes } from '../common/machine-types';
import { ExecutorUnavailableError, type Executor, type JobObserver, type JobSpec } from './executor.port';
import { jobEnvironment, writeSecretFiles } from './job.env';
import { Limiter, SlurmCommands } from './slurm.command';
import {
  ARRAY_MARK,
  ARRAY_NAME_PREFIX,
  arrayIdOf,
  arraySbatchArgs,
  exitOf,
  expandJobId,
  JOB_FILES_DIR,
  jobNameOf,
  jobOptions,
  pendingReasonOf,
  phaseOf,
  sbatchArgs,
  shellEnvironment,
  shellWords,
  type QueuedJob,
  type SbatchOptions,
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
  /** The batch script of job arrays (slurm.array.sh); without it, submitMany submits one by one. */
  arrayScript?: string;
  /** Tasks of one job array that may run at once (`--array=0-N%limit`); 0: no limit. */
  arrayTaskLimit?: number;
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
/** Job ids per scancel call. */
const SCANCEL_BATCH = 1_000;
/** Where job arrays keep their directories, beside the jobs' own under JOBS_DIR. */
const ARRAYS_DIR = '.arrays';

/** scancel's words for a job that has ended already: nothing to stop, not an error. */
const ALREADY_ENDED = /already completing or completed|Invalid job id/i;

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
  /** Arrays this worker submitted, by their job id: how many tasks, how many not yet ended. */
  private readonly arrays = new Map<string, { tasks: number; live: number }>();
  /** Cancels asked for in the same turn, stopped with one scancel. */
  private cancels: { ids: Set<string>; done: Promise<void> } | null = null;

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
    const args = sbatchArgs(spec, this.sbatchOptions());
    // Slurm opens the output files there before the script runs.
    mkdirSync(path.join(spec.workDir, JOB_FILES_DIR), { recursive: true });
    // Submitted alone now: found again by its own name, not by an array an earlier try made.
    await rm(path.join(spec.workDir, JOB_FILES_DIR, ARRAY_MARK), { force: true });
    writeSecretFiles(spec);
    // The job's whole environment (sbatch --export=ALL): none of the service's own variables.
    // Secrets as files: Slurm keeps a job's environment in its state, readable by operators.
    const externalId = await this.sbatch(args, jobEnvironment(spec, this.opts.path, 'files'));
    return this.track(spec, externalId, observer);
  }

  private sbatchOptions(): SbatchOptions {
    return {
      script: this.opts.script,
      runtime: this.opts.runtime,
      machineTypes: this.opts.machineTypes,
      programs: this.opts.programs,
      governance: this.opts.governance,
    };
  }

  /** Runs sbatch; answers the job id (an array's). */
  private async sbatch(args: string[], env: Record<string, string>): Promise<string> {
    const out = await this.commands
      .run(() => this.slurm.run('sbatch', args, env))
      .catch((err: Error) => {
        const message = `could not submit the job to Slurm: ${err.message
          .split('\n')
          .at(-1)!
          .replace(/^(sbatch: )?(error: )?/, '')}`;
        throw err instanceof ExecutorUnavailableError
          ? new ExecutorUnavailableError(message)
          : new Error(message);
      });
    const id = out.trim().split(';')[0];
    if (!/^\d+$/.test(id)) throw new Error(`sbatch answered "${out.trim()}", not a job id`);
    return id;
  }

  private track(spec: JobSpec, externalId: string, observer: JobObserver, arrayLink: string | null = null) {
    this.jobs.set(externalId, {
      ...newTracked(spec, externalId, observer),
      submittedAt: Date.now(),
      arrayLink,
    });
    this.lookSoon();
    return externalId;
  }

  /**
   * Submits jobs as job arrays (docs/executors.md, "Job arrays"): the jobs whose sbatch options
   * are the same (a batch's jobs: one model) become the tasks of one array per MaxArraySize; a job
   * alone is submitted as submit does. Answers `<array id>_<task id>` per job, in spec order.
   * With `retry`, the arrays an earlier attempt submitted (their answer lost, or the controller
   * gone between two arrays) are found by their name and followed, not submitted again.
   */
  async submitMany(
    specs: readonly JobSpec[],
    observers: readonly JobObserver[],
    retry = false,
  ): Promise<string[]> {
    if (this.closed) throw new Error('the executor is shutting down');
    if (specs.length !== observers.length) throw new Error('submitMany: one observer per spec');
    const ids: (string | null)[] = specs.map(() => null);
    if (retry) {
      const found = await this.findArrayTasks(specs);
      found.forEach((id, i) => {
        if (id) ids[i] = this.track(specs[i], id, observers[i], found.links[i]);
      });
    }
    // Jobs whose options are the same share an array; a job's argv and environment are its own.
    const groups = new Map<string, { options: string[]; items: { i: number; argv: string[] }[] }>();
    const sbatchOptions = this.sbatchOptions();
    specs.forEach((spec, i) => {
      if (ids[i] !== null) return;
      const { options, argv } = jobOptions(spec, sbatchOptions);
      const key = JSON.stringify(options);
      const group = groups.get(key) ?? { options, items: [] };
      group.items.push({ i, argv });
      groups.set(key, group);
    });
    const chunks: { options: string[]; items: { i: number; argv: string[] }[] }[] = [];
    const max = groups.size && this.opts.arrayScript ? await this.slurm.maxArraySize() : 1;
    for (const g of groups.values())
      for (let at = 0; at < g.items.length; at += max)
        chunks.push({ options: g.options, items: g.items.slice(at, at + max) });
    const submitted: string[] = [];
    const results = await Promise.allSettled(
      chunks.map(async ({ options, items }) => {
        if (items.length === 1) {
          const { i } = items[0];
          ids[i] = await this.submit(specs[i], observers[i], retry);
          submitted.push(ids[i]);
          return;
        }
        const array = await this.submitArray(
          options,
          items.map(({ i, argv }) => ({ spec: specs[i], argv })),
        );
        submitted.push(array.id);
        this.arrays.set(array.id, { tasks: items.length, live: items.length });
        items.forEach(({ i }, task) => {
          ids[i] = this.track(specs[i], `${array.id}_${task}`, observers[i], array.links[task]);
        });
      }),
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (!failed) return ids as string[];
    const err = failed.reason as Error;
    // The controller is gone: what was submitted is found again by the retry. A refusal is
    // final: nothing of the unit is left running.
    if (!(err instanceof ExecutorUnavailableError)) {
      for (const [id, t] of [...this.jobs])
        if (submitted.includes(arrayIdOf(id) ?? id)) {
          if (t.timer) clearTimeout(t.timer);
          this.jobs.delete(id);
        }
      await this.scancel(submitted).catch(() => undefined);
    }
    throw err;
  }

  /**
   * One sbatch of a job array: its directory (an entry per task id, linking to the task's job
   * directory), each task's argv, environment and mark written first.
   */
  private async submitArray(
    options: string[],
    tasks: { spec: JobSpec; argv: string[] }[],
  ): Promise<{ id: string; links: string[] }> {
    const key = randomUUID();
    const dir = path.join(path.dirname(tasks[0].spec.workDir), ARRAYS_DIR, key);
    await mkdir(dir, { recursive: true });
    const links = await Promise.all(
      tasks.map(async ({ spec, argv }, task) => {
        const files = path.join(spec.workDir, JOB_FILES_DIR);
        await mkdir(files, { recursive: true });
        writeSecretFiles(spec);
        // Secrets as files, as for a lone job; the file is the job's own still (0600).
        await writeFile(
          path.join(files, 'env'),
          shellEnvironment(jobEnvironment(spec, this.opts.path, 'files')),
          { mode: 0o600 },
        );
        await writeFile(path.join(files, 'argv'), `${shellWords(argv)}\n`);
        await writeFile(path.join(files, ARRAY_MARK), `${dir}\n${task}\n`);
        const link = path.join(dir, String(task));
        await rm(link, { force: true });
        await symlink(spec.workDir, link);
        return link;
      }),
    );
    const args = arraySbatchArgs({
      key,
      dir,
      count: tasks.length,
      limit: this.opts.arrayTaskLimit ?? 0,
      options,
      arrayScript: this.opts.arrayScript!,
      jobScript: this.opts.script,
    });
    try {
      return { id: await this.sbatch(args, { PATH: this.opts.path, LANG: 'C.UTF-8' }), links };
    } catch (err) {
      // Not submitted (or its answer lost: then its mark names this directory, which stays).
      if (!(err instanceof ExecutorUnavailableError)) await rm(dir, { recursive: true, force: true });
      throw err;
    }
  }

  /** An array task's mark in its job directory: the array's directory and the task id. */
  private async arrayMarkOf(spec: JobSpec): Promise<{ dir: string; task: string } | null> {
    const text = await readFile(path.join(spec.workDir, JOB_FILES_DIR, ARRAY_MARK), 'utf8').catch(() => '');
    const [dir, task] = text.split('\n');
    return dir && /^\d+$/.test(task ?? '') ? { dir, task } : null;
  }

  /**
   * The array tasks that jobs submitted as such are on the cluster (null for a job whose array
   * squeue does not know): found by the array's name, `media-array-<key>`, one squeue per array.
   */
  private async findArrayTasks(
    specs: readonly JobSpec[],
  ): Promise<(string | null)[] & { links: (string | null)[] }> {
    const marks = await Promise.all(specs.map((s) => this.arrayMarkOf(s)));
    const arrays = new Map<string, Promise<string | null>>();
    for (const mark of marks)
      if (mark && !arrays.has(mark.dir)) arrays.set(mark.dir, this.findArray(path.basename(mark.dir)));
    // An array the cluster does not know was never submitted: its directory goes.
    for (const [dir, id] of arrays) if (!(await id)) await rm(dir, { recursive: true, force: true });
    return Object.assign(
      await Promise.all(
        marks.map(async (mark) => {
          const id = mark ? await arrays.get(mark.dir)! : null;
          return id && mark ? `${id}_${mark.task}` : null;
        }),
      ),
      { links: marks.map((m) => (m ? path.join(m.dir, m.task) : null)) },
    );
  }

  /** The job id of the array named after `key` (the first, should there be several). */
  private async findArray(key: string): Promise<string | null> {
    const found = await this.slurm.squeue([`--name=${ARRAY_NAME_PREFIX}${key}`]);
    const ids = found.flatMap((j) => expandJobId(j.id)).map((id) => arrayIdOf(id) ?? id);
    return ids.sort((a, b) => Number(a) - Number(b))[0] ?? null;
  }

  /** The Slurm job carrying our job id in its name (the first, should there be several). */
  private async findByName(jobId: string): Promise<string | null> {
    const found = await this.slurm.squeue([`--name=${jobNameOf(jobId)}`]);
    return found.map((j) => j.id).sort((a, b) => Number(a) - Number(b))[0] ?? null;
  }

  async adopt(spec: JobSpec, externalId: string | null, observer: JobObserver): Promise<string | null> {
    // An array task carries its array's directory and task id in its own directory.
    const mark = await this.arrayMarkOf(spec);
    // Its submission was never recorded: the job (its array) carries our id in its name.
    if (!externalId && mark) {
      const array = await this.findArray(path.basename(mark.dir));
      externalId = array ? `${array}_${mark.task}` : null;
    }
    externalId ??= mark ? null : await this.findByName(spec.jobId);
    const tracked = newTracked(spec, externalId ?? '', observer);
    if (mark) tracked.arrayLink = path.join(mark.dir, mark.task);
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

  /**
   * Cancels asked for in the same turn (a batch canceled) share one scancel; all the tasks of an
   * array this worker submitted are canceled as the array (`scancel <array id>`).
   */
  async cancel(externalId: string): Promise<void> {
    const tracked = this.jobs.get(externalId);
    if (tracked) tracked.stoppedBy ??= 'canceled';
    if (!this.cancels) {
      const ids = new Set<string>();
      const done = new Promise((resolve) => setImmediate(resolve)).then(() => {
        this.cancels = null;
        return this.scancel(this.wholeArrays([...ids]));
      });
      this.cancels = { ids, done };
    }
    this.cancels.ids.add(externalId);
    await this.cancels.done;
  }

  /** The ids, with every task of an array this worker submitted replaced by the array's id. */
  private wholeArrays(ids: string[]): string[] {
    const byArray = new Map<string, number>();
    for (const id of ids) {
      const array = arrayIdOf(id);
      if (array) byArray.set(array, (byArray.get(array) ?? 0) + 1);
    }
    const whole = new Set([...byArray].filter(([a, n]) => this.arrays.get(a)?.tasks === n).map(([a]) => a));
    return [...whole, ...ids.filter((id) => !whole.has(arrayIdOf(id) ?? ''))];
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
  private async scancel(externalIds: string[]): Promise<void> {
    for (let i = 0; i < externalIds.length; i += SCANCEL_BATCH) {
      const ids = externalIds.slice(i, i + SCANCEL_BATCH);
      try {
        await this.commands.run(() => this.slurm.run('scancel', ids));
      } catch (err) {
        if (err instanceof ExecutorUnavailableError) throw err;
        // A job that has ended is not an error; anything else is worth a word.
        const said = (err as Error).message.split('\n').filter((l) => l.trim() && !ALREADY_ENDED.test(l));
        if (said.length) this.opts.log.warn({ err, externalIds: ids }, 'scancel failed');
      }
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
      // An array is asked about by its id: squeue answers every task of it.
      const ids = [...new Set(live.map((t) => arrayIdOf(t.externalId) ?? t.externalId))];
      for (let i = 0; i < ids.length; i += SQUEUE_BATCH) {
        const asked = ids.slice(i, i + SQUEUE_BATCH).join(',');
        for (const job of await this.slurm.squeue([`--jobs=${asked}`]))
          for (const id of expandJobId(job.id)) queued.set(id, job);
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
    this.scancel([t.externalId]).catch((err) => {
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
    if (t.arrayLink) await this.taskEnded(t.arrayLink, arrayIdOf(t.externalId));
    const exit = exitOf(state, exitCode, t.stoppedBy, t.timeoutSeconds);
    if (exit.reason === 'lost')
      exit.detail = t.externalId
        ? `the cluster no longer knows Slurm job ${t.externalId}; nothing of it is left to follow`
        : 'the job is not on the cluster: its submission was interrupted, or it left the queue long ago';
    t.observer.ended(exit);
  }

  /** An array task ended: its entry goes, and the array's directory with its last one. */
  private async taskEnded(link: string, arrayId: string | null): Promise<void> {
    await unlink(link).catch(() => undefined);
    await rmdir(path.dirname(link)).catch(() => undefined); // fails while other tasks are left
    const array = arrayId ? this.arrays.get(arrayId) : undefined;
    if (array && --array.live <= 0) this.arrays.delete(arrayId!);
  }
}
