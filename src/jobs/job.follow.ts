import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { isDatabaseUnavailable } from '../common/errors';
import type { Logger } from '../common/logger';
import type { Owner } from '../common/principal';
import type { DeploymentService } from './deployment.service';
import {
  ExecutorUnavailableError,
  type Executor,
  type JobExit,
  type JobObserver,
  type JobSpec,
  type LogStream,
} from '../executors/executor.port';
import type { MediaService } from '../media/media.service';
import { lineRedactions, secretRedactor, type SecretValue } from '../secrets/secret.redact';
import { freeBytes, isOutOfSpace, StoreFull } from '../storage/storage.space';
import { priorityOfRank } from './deployment.entity';
import type { Job, JobOutput } from './job.entity';
import { stageInputs, storeOutputs, workDirOf } from './job.files';
import { JobLog, type LogLine } from './job.log';
import type { JobService } from './job.service';
import { isTerminal, type JobStatus } from './job.states';
import type { SubmitFn } from './job.submit-group';
import { UnavailableRetry } from './job.unavailable';

/**
 * Written into a job's directory before a detached executor is asked to submit it. A worker that
 * takes the job over finds it there and looks for the job on the executor (by the job id it
 * carries) instead of submitting it a second time.
 */
const SUBMITTED_MARK = '.submitted';

/** What a followed job needs from its worker. */
export interface FollowContext {
  workerId: string;
  jobs: JobService;
  media: MediaService;
  deployments: Pick<DeploymentService, 'byIds'>;
  /** JOBS_DIR, where each job has its directory (workDirOf). */
  jobsDir: string;
  executor: Executor;
  log: Logger;
  publish(job: Job, lines: LogLine[]): Promise<void>;
  /** How long a submission or a cancel is tried again while the cluster is unreachable. */
  clusterRetrySeconds: number;
  /**
   * The owner's secrets of these names, opened (SecretService.open): only here, in the worker,
   * at dispatch. Absent: jobs get no secrets (a model that names some cannot run).
   */
  openSecrets?(owner: Owner, names: readonly string[]): Promise<SecretValue[]>;
  /** Records why a job waits; written in batches. */
  notePending(jobId: string, reason: string | null): void;
  /**
   * Runs `step` again (with `retry` true) while the database is unavailable, so that what happens
   * to a job during an outage is recorded once the database is back.
   */
  untilAvailable<T>(step: (retry: boolean) => Promise<T>): Promise<T>;
}

/**
 * The job's directory and its output directory: two plain mkdirs when JOBS_DIR is there (a
 * recursive one first fails, then walks up: 3.5x the time, paid per job of a batch).
 */
function makeDirs(workDir: string, outputDir: string): void {
  try {
    mkdirSync(workDir);
    mkdirSync(outputDir);
  } catch {
    mkdirSync(outputDir, { recursive: true });
  }
}

/** The error of a job that ended this way, or null when it succeeded. */
export function failureOf(exit: JobExit, timeoutSeconds: number): string | null {
  if (exit.detail) return exit.detail;
  switch (exit.reason) {
    case 'canceled':
      // Canceled by its owner, the job is `canceled` already; otherwise the worker shut down.
      return 'the worker shut down while the job ran; its processes were stopped';
    case 'lost':
      return 'the executor lost track of the job; its processes were stopped';
    case 'timeout':
      return `timed out after ${timeoutSeconds} s; its processes were stopped`;
  }
  if (exit.exitCode === 0) return null;
  return `the program ${exit.exitCode === null ? `was killed by ${exit.signal}` : `exited with code ${exit.exitCode}`}`;
}

/**
 * The infrastructure failed the job, not its program: the executor says so (node failure,
 * preemption), lost it, or stopped it because the worker shut down (a job canceled by its owner
 * is `canceled` already and never recorded as failed).
 */
export function infrastructureFailure(exit: JobExit): boolean {
  return exit.infrastructure === true || exit.reason === 'lost' || exit.reason === 'canceled';
}

/**
 * One job on the executor, followed by this worker from its submission (or its adoption, when
 * the job is taken over from a worker that is gone) to its end: the executor's reports become
 * transitions, log lines and, at the end, outputs. Reports are handled one after the other, and
 * only once the executor has answered the submission.
 */
export class JobFollow implements JobObserver {
  /** Settles once the executor has the job, or the job failed before it got there. */
  readonly started: Promise<void>;
  /** Settles when this worker is done with the job: its end recorded, or let go on shutdown. */
  readonly done: Promise<void>;
  /** Settles once the executor reported the job's end (or, at the latest, with `done`). */
  readonly ran: Promise<void>;
  private settle!: () => void;
  private markRan!: () => void;
  private chain: Promise<void>;
  private externalId: string | null;
  private status: JobStatus;
  private pendingReason: string | null;
  private readonly log: JobLog;
  private readonly workDir: string;
  private readonly outputDir: string;
  private stopRequested = false;
  /** The executor reported the end: nothing is left to stop. */
  private exited = false;
  private released = false;
  private over = false;
  /** A failure of this worker while following: the job fails with it. */
  private error: string | null = null;
  /** Submissions and cancels, while the cluster cannot be reached. */
  private readonly retry: UnavailableRetry;
  private canceling = false;
  /** The job's secrets in clear (memory only), and what its output is redacted with. */
  private secrets: SecretValue[] = [];
  private redact = (line: string) => line;

  constructor(
    private readonly ctx: FollowContext,
    private readonly job: Job,
    adopting: boolean,
    /** How it is submitted: by default on its own (`executor.submit`); a batch's chunk together. */
    private readonly submitVia: SubmitFn = (spec, observer, retry) =>
      ctx.executor.submit(spec, observer, retry),
    /** Its `running` and `succeeded` written with other jobs' (JobService.transitionInSet). */
    private readonly inSets = false,
  ) {
    this.externalId = job.externalId;
    this.retry = new UnavailableRetry(ctx.clusterRetrySeconds);
    this.status = job.status;
    this.pendingReason = job.pendingReason;
    this.workDir = workDirOf(ctx.jobsDir, job.id);
    this.outputDir = path.join(this.workDir, 'output');
    this.log = new JobLog({
      publish: (lines) => ctx.publish(job, lines),
      save: (tail) => ctx.jobs.saveLogTail(job.id, tail),
      failed: (err) => ctx.log.warn({ err, jobId: job.id }, 'job output not published or saved'),
    });
    this.done = new Promise((resolve) => (this.settle = resolve));
    this.ran = new Promise((resolve) => (this.markRan = resolve));
    void this.done.then(this.markRan);
    let open!: () => void;
    this.chain = new Promise((resolve) => (open = resolve));
    this.started = (adopting ? this.adopt() : this.submit()).finally(open);
  }

  // The executor's reports (JobObserver).

  pending(reason: string | null): void {
    this.then(() => this.onPending(reason));
  }

  running(nodes: string[]): void {
    this.then(() => this.onRunning(nodes));
  }

  line(stream: LogStream, line: string, earlier?: boolean): void {
    // Redacted before anything keeps or sends it: the tail, the result, events, webhooks.
    if (!this.released) this.log.line(stream, this.redact(line), earlier);
  }

  ended(exit: JobExit): void {
    this.exited = true;
    this.markRan();
    this.then(() => this.onEnded(exit));
  }

  abandoned(): boolean {
    return this.stopRequested || this.released;
  }

  /**
   * The job reached an end in the database (canceled, failed by a reconciliation, or its own end
   * recorded here): stop it on the executor, unless it has ended there already.
   */
  stop(): void {
    this.stopRequested = true;
    this.retry.wake();
    if (this.externalId && !this.exited) this.cancel();
  }

  /**
   * On shutdown, for a detached executor: stop following without touching the job, which goes on
   * running; another worker (or this one after its restart) takes it over.
   */
  async release(): Promise<void> {
    this.released = true;
    this.retry.wake();
    await this.chain;
    if (!this.over) {
      await this.log.end();
      await this.ctx.jobs.saveLogTail(this.job.id, this.log.tail()).catch(() => undefined);
    }
    this.settle();
  }

  private then(step: () => Promise<void>): void {
    this.chain = this.chain
      .then(() => (this.over || this.released ? undefined : step()))
      .catch((err) => this.abort(err));
  }

  /** A fresh claim: prepare the directory, stage the inputs, submit. */
  private async submit(): Promise<void> {
    const { executor } = this.ctx;
    try {
      // Synchronous on purpose: a few tiny syscalls, where the thread pool added milliseconds.
      makeDirs(this.workDir, this.outputDir);
      await this.openSecrets(true);
      await stageInputs(this.ctx.media, this.job, this.workDir);
      if (executor.detached) writeFileSync(path.join(this.workDir, SUBMITTED_MARK), '');
      // The cluster cannot be reached: the job waits `starting`, saying why, and is submitted
      // once it answers. Canceled meanwhile, only a job an earlier attempt may have submitted
      // after all is looked for, to be stopped.
      const externalId = await this.retry.run(
        (retry) =>
          retry && this.stopRequested
            ? executor.adopt(this.spec(), null, this)
            : this.submitVia(this.spec(), this, retry),
        (err, waitMs) => {
          this.ctx.log.warn({ err, jobId: this.job.id, retryInMs: waitMs }, 'the cluster cannot be reached');
          void this.onPending(`${err.message} (trying again)`);
        },
        () => this.released,
      );
      if (externalId) await this.submitted(externalId);
    } catch (err) {
      // No room for its directory or its inputs: the job fails saying so, not with an errno.
      const jobsDir = path.dirname(this.workDir);
      await this.failEarly(isOutOfSpace(err) ? new StoreFull('jobs', await freeBytes(jobsDir)) : err);
    }
  }

  /** A job taken over: follow it where it is, or submit it if its submission never began. */
  private async adopt(): Promise<void> {
    if (!this.job.externalId && !existsSync(path.join(this.workDir, SUBMITTED_MARK))) {
      if (this.status !== 'canceled') return this.submit();
      // Canceled before it was ever submitted: nothing to stop.
      await this.ctx.jobs.releaseWorker(this.job.id, this.ctx.workerId).catch(() => undefined);
      await rm(this.workDir, { recursive: true, force: true });
      this.over = true;
      this.settle();
      return;
    }
    try {
      // For its output's redaction (its files were written at its submission).
      await this.openSecrets(false).catch((err) =>
        this.ctx.log.warn(
          { err, jobId: this.job.id },
          "a job's secrets could not be opened to redact its output",
        ),
      );
      const externalId = await this.ctx.executor.adopt(this.spec(), this.job.externalId, this);
      if (externalId) await this.submitted(externalId);
    } catch (err) {
      // The executor cannot be asked now (the controller is down): the job is not failed for
      // that; the next reconciliation, here or elsewhere, takes it over again.
      this.ctx.log.warn({ err, jobId: this.job.id }, 'could not take over a job; trying again later');
      await this.ctx.jobs.releaseWorker(this.job.id, this.ctx.workerId).catch(() => undefined);
      this.over = true;
      this.settle();
    }
  }

  private async submitted(externalId: string): Promise<void> {
    this.externalId = externalId;
    if (this.ctx.executor.detached && this.job.externalId !== externalId)
      // Not fatal: the `running` transition records it too, and a worker taking the job over
      // finds it by its name.
      await this.ctx.jobs
        .recordSubmission(this.job.id, this.ctx.workerId, externalId)
        .catch((err) => this.ctx.log.warn({ err, jobId: this.job.id }, 'could not record the submission'));
    if (this.stopRequested && !this.exited) this.cancel();
  }

  private async onPending(reason: string | null): Promise<void> {
    if (this.status !== 'starting' || reason === this.pendingReason) return;
    this.pendingReason = reason;
    this.ctx.notePending(this.job.id, reason);
  }

  private async onRunning(nodes: string[]): Promise<void> {
    if (this.status !== 'starting') return; // adopted while running, or canceled
    const { jobs } = this.ctx;
    const externalId = this.externalId ?? undefined;
    const moved = await this.ctx.untilAvailable(async (retry) => {
      // A retried statement may have committed before its answer was lost.
      const now = retry ? await jobs.byId(this.job.id) : null;
      if (now?.status === 'running') return now;
      return this.inSets
        ? jobs.transitionInSet(this.job.id, 'running', { externalId, nodes })
        : jobs.transition(this.job.id, 'running', { externalId, nodes });
    });
    if (moved) this.status = 'running';
    else this.stop(); // canceled while starting
  }

  private async onEnded(exit: JobExit): Promise<void> {
    try {
      await this.log.end();
      await this.ctx.untilAvailable(async (retry) => {
        if (retry) {
          // Started again from scratch, unless the failed attempt's end was recorded after all.
          const now = await this.ctx.jobs.byId(this.job.id);
          if (now?.status === 'canceled') await this.ctx.jobs.releaseWorker(this.job.id, this.ctx.workerId);
          if (!now || isTerminal(now.status)) return;
          await this.ctx.media.discardJobOutputs(this.job.id);
        }
        await this.finish(exit);
      });
    } catch (err) {
      this.ctx.log.warn({ err, jobId: this.job.id }, 'job failed before it could finish');
      await this.recordFailure((err as Error).message, exit.exitCode);
    } finally {
      await rm(this.workDir, { recursive: true, force: true });
      this.over = true;
      this.settle();
    }
  }

  private async finish(exit: JobExit): Promise<void> {
    const error = this.error ?? failureOf(exit, this.job.timeoutSeconds);
    // An executor may report a success without having said that the job ran (it ran and ended
    // between two looks): the job has run, and goes through `running` (succeeded comes only
    // from there). Without this step the end is refused and the job stays `starting`.
    if (error === null && this.status === 'starting') await this.onRunning([]);
    if (error === null) {
      const output: JobOutput = {
        files: await storeOutputs(this.ctx.media, this.ctx.deployments, this.job, this.outputDir),
        result: this.log.result(),
      };
      // Its outputs become visible in the same statement; canceled at the last moment, none do.
      const fields = { exitCode: exit.exitCode, logTail: this.log.tail(), output, publishOutputs: true };
      const moved = await (this.inSets
        ? this.ctx.jobs.transitionInSet(this.job.id, 'succeeded', fields)
        : this.ctx.jobs.transition(this.job.id, 'succeeded', fields));
      if (moved) return;
      await this.ctx.media.discardJobOutputs(this.job.id);
    } else {
      const infrastructure = this.error === null && infrastructureFailure(exit);
      if (await this.fail(error, exit.exitCode, infrastructure, infrastructure && exit.neverRan === true))
        return;
    }
    // It ended elsewhere (canceled): keep what it printed; nothing is left to follow.
    await this.ctx.jobs.saveLogTail(this.job.id, this.log.tail());
    await this.ctx.jobs.releaseWorker(this.job.id, this.ctx.workerId);
  }

  /**
   * Records the failure. `infrastructure`: the executor, not the program, failed the job (lost,
   * node failure, preemption, worker shutdown); recorded on the job, and the basis of automatic
   * retries (the model's `max_retries`); `neverRan`: nothing of it ran, and its retry is not
   * counted (TransitionFields).
   */
  private async fail(
    error: string,
    exitCode: number | null,
    infrastructure = false,
    neverRan = false,
  ): Promise<Job | null> {
    const moved = await this.ctx.jobs.transition(this.job.id, 'failed', {
      exitCode,
      error,
      logTail: this.log.tail(),
      infrastructure,
      neverRan,
    });
    if (moved && infrastructure)
      this.ctx.log.warn(
        { jobId: this.job.id, error, infrastructure },
        'a job failed because of the infrastructure',
      );
    return moved;
  }

  /** Fails the job without outputs, once the database answers; a failure to do so is logged. */
  private async recordFailure(error: string, exitCode: number | null, infrastructure = false): Promise<void> {
    await this.ctx
      .untilAvailable(async () => {
        await this.ctx.media.discardJobOutputs(this.job.id).catch((e) => {
          if (isDatabaseUnavailable(e)) throw e;
        });
        await this.fail(error, exitCode, infrastructure);
      })
      .catch((e) => this.ctx.log.error({ err: e, jobId: this.job.id }, 'could not record a failed job'));
  }

  /** Failed before the executor had the job: nothing runs. */
  private async failEarly(err: unknown): Promise<void> {
    if (this.externalId) return this.abort(err); // it runs: stop it, and fail when it has ended
    this.ctx.log.warn({ err, jobId: this.job.id }, 'job failed before it could start');
    await this.log.end();
    // The cluster did not answer for CLUSTER_RETRY_SECONDS: not the program's fault.
    await this.recordFailure((err as Error).message, null, err instanceof ExecutorUnavailableError);
    await rm(this.workDir, { recursive: true, force: true });
    this.over = true;
    this.settle();
  }

  /** This worker failed while following: stop the job; it fails with the error once it ended. */
  private abort(err: unknown): void {
    this.ctx.log.warn({ err, jobId: this.job.id }, 'job stopped: its worker failed to follow it');
    this.error ??= (err as Error).message;
    this.stop();
  }

  /** Stops the job on the executor, tried again while the cluster cannot be reached. */
  private cancel(): void {
    if (this.canceling) return;
    this.canceling = true;
    this.retry
      .run(
        () => this.ctx.executor.cancel(this.externalId!),
        (err, waitMs) =>
          this.ctx.log.warn({ err, jobId: this.job.id, retryInMs: waitMs }, 'could not stop the job yet'),
        () => this.released || this.exited,
      )
      .catch((err) =>
        this.ctx.log.warn({ err, jobId: this.job.id }, 'could not stop the job on the executor'),
      )
      .finally(() => (this.canceling = false));
  }

  /**
   * Opens the secrets the job's model version names, from the owner's secrets as they are now.
   * `required`: one the owner has deleted since the job was made fails the job, naming it.
   */
  private async openSecrets(required: boolean): Promise<void> {
    const names = this.job.secrets;
    if (!names.length) return;
    if (!this.ctx.openSecrets) throw new Error('this worker cannot open secrets');
    this.secrets = await this.ctx.openSecrets({ type: this.job.ownerType, id: this.job.ownerId }, names);
    this.redact = secretRedactor(lineRedactions(this.secrets));
    const have = new Set(this.secrets.map((v) => v.name));
    const gone = names.filter((n) => !have.has(n));
    if (required && gone.length)
      throw new Error(
        `the secret${gone.length > 1 ? 's' : ''} ${gone.join(', ')} no longer exist${gone.length > 1 ? '' : 's'}; set it and run the job again`,
      );
  }

  private spec(): JobSpec {
    const { job } = this;
    return {
      jobId: job.id,
      owner: { type: job.ownerType, id: job.ownerId },
      priority: priorityOfRank(job.priorityRank),
      argv: job.argv,
      env: {},
      secrets: this.secrets,
      container: job.container,
      machineType: job.machineType,
      machineCount: job.machineCount,
      timeoutSeconds: job.timeoutSeconds,
      inputs: job.inputs.map((i) => i.path),
      workDir: this.workDir,
      outputDir: this.outputDir,
    };
  }
}
