import type { MikroORM } from '@mikro-orm/postgresql';
import { run, type Runner } from 'graphile-worker';
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import os from 'node:os';
import { isDatabaseUnavailable } from '../common/errors';
import type { Logger } from '../common/logger';
import { pause, Pauses } from '../common/time';
import { boundedPool } from '../db/pg-bounds';
import type { DeploymentService } from './deployment.service';
import type { Executor } from '../executors/executor.port';
import type { MediaService } from '../media/media.service';
import type { SecretService } from '../secrets/secret.service';
import type { JobReservation, LocalClaims, LocalWorker } from './job.claim';
import type { JobEvents } from './job.events';
import type { Job } from './job.entity';
import { JobFollow, type FollowContext } from './job.follow';
import { BATCH_DISPATCH_TASK, DISPATCH_TASK } from './job.queue';
import { SubmitGroup, type SubmitFn } from './job.submit-group';
import type { JobService } from './job.service';
import type { FollowedRow } from './job.store';
import { isTerminal } from './job.states';
import { JobReconciler, STALE_WORKER_SECONDS } from './job.reconciler';
import { graphileLogger, registeringPreset, WorkerRegistry } from './job.worker-registry';

const HEARTBEAT_MS = 5_000;
const RECONCILE_MS = 10_000;
/** A worker that could not beat for this long does not judge others (it may be the one cut off). */
const OWN_BEAT_TRUST_MS = 15_000;
/**
 * Dispatch tasks a worker runs at once for a detached executor. A task ends once the cluster has
 * the job, so a few suffice; they bound the submissions (`sbatch` processes) of a burst.
 */
const CLUSTER_DISPATCH_CONCURRENCY = 8;
/** Pending reasons are written together, at most this often. */
const PENDING_NOTES_MS = 1000;
/**
 * A local batch's chunk claims ahead as many jobs as this worker finishes in about this long
 * (so that its processes start back to back), at most MAX_LOOKAHEAD; an interactive job waits
 * at most about this long behind them for a slot.
 */
const LOOKAHEAD_MS = 100;
const MAX_LOOKAHEAD = 128;
/** A local chunk's task claims for at most this long, then gives the rest back to the queue. */
const SLICE_MS = 1000;
/** Batches whose pace this worker remembers (for their lookahead). */
const PACES_KEPT = 64;
/** A batch's pace is measured over windows this long, from this many ends on. */
const PACE_WINDOW_MS = 1000;
const PACE_MIN_ENDS = 4;

export interface JobRunnerOptions {
  databaseUrl: string;
  /** Jobs this worker dispatches and follows at once (WORKER_CONCURRENCY). */
  concurrency: number;
  /** DATABASE_QUERY_TIMEOUT_MS, for the queue's own connections. */
  queryTimeoutMs?: number;
  /** CLUSTER_RETRY_SECONDS: how long a submission or cancel waits for an unreachable cluster. */
  clusterRetrySeconds?: number;
  /** JOBS_DIR: where each job's directory is. */
  jobsDir: string;
}

/** A batch's dispatch task: its jobs, in order (JobStore.createItems). */
interface BatchChunk {
  batchId: string;
  jobIds: string[];
}

/** Why a dispatch task gives its job back to the queue: graphile-worker retries it later. */
class WorkerStopping extends Error {}

/**
 * The worker role: takes dispatch tasks from the PostgreSQL queue (graphile-worker), has each job
 * run by the executor and follows it to its end (JobFollow), and records every transition. A
 * heartbeat marks the process alive; jobs of workers that stopped beating are reconciled, so
 * nothing stays running forever and nothing runs twice.
 *
 * With a local executor a dispatch task lasts as long as its job: the task slots are the CPUs the
 * jobs use. With a detached executor (a cluster) a task ends once the cluster has the job; the
 * worker then follows it with all its others from the executor's one loop, up to `concurrency`
 * jobs, and any worker can take over the jobs of one that is gone.
 */
export class JobRunner implements LocalWorker {
  readonly instanceId = randomUUID();
  private readonly host = os.hostname();
  private readonly runners: Runner[] = [];
  private queuePool: ReturnType<typeof boundedPool> | null = null;
  private readonly timers: NodeJS.Timeout[] = [];
  /** Jobs this worker has claimed or taken over and not finished with (null while claiming). */
  private readonly following = new Map<string, JobFollow | null>();
  /** The pauses of untilAvailable, cut short by a stop (which waits for the local jobs' ends). */
  private readonly pauses = new Pauses();
  /** Dispatch tasks waiting for a slot; a local batch's chunk claims no more ahead while one does. */
  private readonly waiting: (() => void)[] = [];
  /** Local chunks waiting for one of this worker's jobs to end. */
  private readonly chunkWaiters: (() => void)[] = [];
  /** Jobs of local chunks that have run and wait for their end to be written. */
  private readonly finishing = new Set<JobFollow>();
  /** Of recent local batches: their jobs' ends here in the current window, and the time per end (ms). */
  private readonly paces = new Map<string, { since: number; ends: number; interval: number | null }>();
  private offEvents: (() => void)[] = [];
  private stopping = false;
  private lastBeat = 0;
  private readonly context: FollowContext;
  /** Pending reasons not written yet, by job id. */
  private pendingNotes = new Map<string, string | null>();
  /** The graphile-worker ids of this process's queue runners, recorded with the heartbeat. */
  private readonly queueWorkers: string[] = [];
  private readonly registry: WorkerRegistry;
  private readonly reconciler: JobReconciler;
  private stopServing: () => void = () => undefined;

  constructor(
    orm: MikroORM,
    private readonly jobs: JobService,
    deployments: Pick<DeploymentService, 'byIds'>,
    /** Where jobs created in this process find this worker's free slots. */
    private readonly claims: LocalClaims,
    media: MediaService,
    private readonly executor: Executor,
    private readonly events: JobEvents,
    private readonly log: Logger,
    private readonly opts: JobRunnerOptions,
    /** Opens the owner's secrets a job gets, at its dispatch (SecretService). */
    secrets: Pick<SecretService, 'open'> | null = null,
  ) {
    this.context = {
      workerId: this.instanceId,
      jobs,
      media,
      deployments,
      jobsDir: opts.jobsDir,
      executor,
      log,
      publish: (job, lines) => jobs.publishLines(job, lines),
      openSecrets: secrets ? (owner, names) => secrets.open(owner, names) : undefined,
      clusterRetrySeconds: opts.clusterRetrySeconds ?? 3600,
      notePending: (jobId, reason) => this.pendingNotes.set(jobId, reason),
      untilAvailable: (step) => this.untilAvailable(step),
    };
    this.registry = new WorkerRegistry(orm, { id: this.instanceId, host: this.host, pid: process.pid });
    this.reconciler = new JobReconciler(this.registry, jobs, executor, log, {
      id: this.instanceId,
      host: this.host,
      follows: (jobId) => this.following.has(jobId),
      stopping: () => this.stopping,
      takeOver: (row) => this.takeOver(row),
    });
  }

  async start(): Promise<void> {
    await this.beat();
    this.every(HEARTBEAT_MS, () => this.beat().catch((err) => this.beatFailed(err)));
    // A job of this worker that reached an end elsewhere (canceled by its owner through any
    // process, or failed by a reconciliation) must not keep running.
    // (Those of a gap in the bus connection are read back by JobEvents.)
    this.offEvents = [
      await this.events.onTransition('every', (e) => {
        if (isTerminal(e.status)) this.following.get(e.jobId)?.stop();
      }),
    ];
    await this.reconcile();
    this.every(RECONCILE_MS, () => this.reconcile());
    this.every(PENDING_NOTES_MS, () => this.writePendingNotes());
    const concurrency = this.executor.detached
      ? Math.min(this.opts.concurrency, CLUSTER_DISPATCH_CONCURRENCY)
      : this.opts.concurrency;
    this.queuePool = boundedPool({
      connectionString: this.opts.databaseUrl,
      max: Math.min(10, concurrency + 2),
      timeoutMs: this.opts.queryTimeoutMs ?? 0,
      applicationName: 'media-platform-queue',
    });
    await this.startQueue(concurrency);
    // Jobs created in this process while a slot is free are claimed by their creating statement.
    if (!this.executor.detached) this.stopServing = this.claims.serve(this);
  }

  /**
   * A slot for a job about to be created in this process (see JobReservation), while one is free.
   * Only for an executor whose jobs run in this process (the local one): a cluster's submissions
   * are bounded by the dispatch tasks. Queued jobs wait for slots taken this way (see dispatch).
   */
  reserve(jobId: string): JobReservation | null {
    if (this.stopping || this.following.size >= this.opts.concurrency) return null;
    this.following.set(jobId, null);
    const free = () => {
      if (this.following.get(jobId) !== null) return false;
      this.following.delete(jobId);
      return true;
    };
    return {
      workerId: this.instanceId,
      follow: (job) => {
        // Created while this worker began to stop: left `starting`, for reconciliation to fail as
        // an infrastructure failure (retried per max_retries), as if the worker had died then.
        if (free() && !this.stopping) this.follow(job, false);
      },
      release: () => {
        if (free()) this.wakeOne();
      },
    };
  }

  /**
   * Takes dispatch tasks with `concurrency` workers. A graphile-worker worker that cannot record a
   * task's end (the database went away at that moment) stops for good (0.16 does not replace
   * it), so a new one is started in its place once the database answers again.
   */
  private async startQueue(concurrency: number): Promise<void> {
    const events = new EventEmitter() as NonNullable<Parameters<typeof run>[0]['events']>;
    events.on('worker:fatalError', () => void this.replaceQueueWorker());
    this.runners.push(
      await run({
        pgPool: this.queuePool!,
        concurrency,
        noHandleSignals: true,
        pollInterval: 2000,
        logger: graphileLogger(this.log),
        preset: registeringPreset(this.registerQueueWorker),
        events,
        taskList: {
          [DISPATCH_TASK]: async (payload) => this.dispatch(Boolean((payload as { jobId?: string })?.jobId)),
          [BATCH_DISPATCH_TASK]: async (payload) => this.dispatchChunk(payload as BatchChunk),
        },
      }),
    );
  }

  private async replaceQueueWorker(): Promise<void> {
    for (let wait = 500; !this.stopping; wait = Math.min(wait * 2, 10_000)) {
      try {
        return await this.startQueue(1);
      } catch (err) {
        this.log.warn({ err, retryInMs: wait }, 'cannot replace a stopped queue worker yet');
        await pause(wait);
      }
    }
  }

  /**
   * Runs `step` again while the database is unavailable, so that what happens to a job during an
   * outage is recorded once the database is back; a stopping worker leaves it to reconciliation.
   */
  private async untilAvailable<T>(step: (retry: boolean) => Promise<T>): Promise<T> {
    for (let retry = false, wait = 500; ; retry = true, wait = Math.min(wait * 2, 10_000)) {
      try {
        return await step(retry);
      } catch (err) {
        if (!isDatabaseUnavailable(err) || this.stopping) throw err;
        this.log.warn(
          { err, retryInMs: wait },
          'the database is unavailable; the job is recorded when it is back',
        );
        await this.pauses.pause(wait);
      }
    }
  }

  /**
   * Stops taking tasks. A local executor's jobs are stopped at the same time (they fail: the
   * worker shut down); a cluster's jobs run on, and are let go for another worker (or this one
   * after its restart) to take over. Tasks that arrive meanwhile go back to the queue.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.stopServing();
    for (const t of this.timers) clearInterval(t);
    for (const wake of this.waiting.splice(0)) wake();
    this.pauses.wakeAll();
    this.wakeChunks();
    if (this.executor.detached) {
      // Dispatches in flight finish their submission first, so that nothing is half submitted.
      await Promise.all(this.runners.map((r) => r.stop()));
      await this.executor.close();
      await Promise.all([...this.following.values()].map((f) => f?.release()));
    } else {
      await Promise.all([...this.runners.map((r) => r.stop()), this.executor.close()]);
      // Their ends written before the database goes: a job stopped here is not left for another
      // worker's reconciliation to find (`untilAvailable` gives up once stopping).
      await Promise.all([...this.following.values()].map((f) => f?.done));
    }
    await this.queuePool?.end();
    for (const off of this.offEvents) off();
    try {
      await this.registry.remove();
    } catch (err) {
      // The database went first (stopped with the service, say): the others' reconciliation finds
      // this worker gone, as after a crash.
      if (!isDatabaseUnavailable(err)) throw err;
      this.log.warn({ err }, 'the database is unavailable: this worker is left for the others to find gone');
    }
  }

  /** Registers or re-registers this worker and its queue runners, on the database's clock. */
  private async beat(): Promise<void> {
    await this.registry.beat(this.queueWorkers);
    this.lastBeat = Date.now();
  }

  /**
   * Records a graphile-worker id of this process (the job queue's, or TaskRunner's) before it
   * takes its first task: once this worker is found gone, the tasks it held are unlocked at once.
   */
  readonly registerQueueWorker = async (workerId: string): Promise<void> => {
    this.queueWorkers.push(workerId);
    for (let wait = 500; ; wait = Math.min(wait * 2, 10_000)) {
      try {
        return await this.beat();
      } catch (err) {
        if (this.stopping) throw err;
        this.log.warn({ err, retryInMs: wait }, 'cannot record a queue worker yet');
        await pause(wait);
      }
    }
  };

  /**
   * Others take this worker for gone once its beat is 30 s old: past that, it must not go on
   * following cluster jobs that another worker may have taken over. It lets them go; once it
   * beats again, its reconciliation takes back those nobody took.
   */
  private async beatFailed(err: unknown): Promise<void> {
    const silentMs = Date.now() - this.lastBeat;
    if (this.executor.detached && silentMs > (STALE_WORKER_SECONDS - HEARTBEAT_MS / 1000) * 1000) {
      const follows = [...this.following.values()].filter((f) => f !== null);
      if (follows.length)
        this.log.warn(
          { silentMs, jobs: follows.length },
          'cannot beat: letting go of the jobs this worker follows',
        );
      await Promise.all(follows.map((f) => f.release()));
    }
    throw err;
  }

  private every(ms: number, fn: () => Promise<unknown>): void {
    const timer = setInterval(() => {
      if (!this.stopping) void fn().catch((err) => this.log.warn({ err }, 'job worker housekeeping failed'));
    }, ms);
    timer.unref();
    this.timers.push(timer);
  }

  /**
   * A dispatch task: one is queued per job created (and one more whenever a job ends while jobs
   * wait), but a task does not pin its job. With a free slot, it claims the best queued job of
   * any owner (JobService.claimNext: fair share, priority, age, quotas, in one statement), so a
   * slot never goes to a job that fair share says should wait. A task that finds nothing to
   * claim ends: the job it was queued for was taken by another task, canceled, or waits for a
   * quota, and the end of a job queues the task that takes it then.
   */
  private async dispatch(forJob: boolean): Promise<void> {
    // A wake-up (queued when a job ended, for jobs a quota held) that finds every slot taken
    // ends: the slot went to another job, whose end wakes another. Waiting, it would hold a
    // queue slot that a batch's next chunk needs.
    if (!forJob && this.following.size >= this.opts.concurrency) return;
    // Slots may be held by jobs claimed where they were created (reserve), not by tasks only.
    await this.room();
    if (this.stopping) throw new WorkerStopping('the worker is shutting down; the job stays queued');
    // The slot is held while claiming, under a key no job has.
    const slot = `claim:${randomUUID()}`;
    this.following.set(slot, null);
    let job: Job | null = null;
    try {
      job = await this.jobs.claimNext(this.instanceId);
    } finally {
      this.following.delete(slot);
      // Nothing claimed (or the claim failed): the slot goes to a task waiting for one.
      if (!job) this.wakeOne();
    }
    if (!job) return;
    const follow = this.follow(job, false);
    await (this.executor.detached ? follow.started : follow.done);
  }

  /**
   * A batch's chunk (JobStore.createItems). An executor that submits many jobs at once
   * (`submitMany`: Slurm arrays) gets as many of the chunk's queued jobs as this worker has room
   * for, claimed in one statement and submitted together; the rest goes back to the queue as a
   * chunk of its own. The local executor runs the chunk itself (runChunk). Any other executor
   * gets each job on its own, as a single deployment's (one dispatch task per job, at the
   * batch's lower priority); so does a chunk whose claim a quota holds, whose jobs then wait for
   * it as single jobs do.
   */
  private async dispatchChunk(chunk: BatchChunk): Promise<void> {
    const { executor } = this;
    if (!executor.submitMany)
      return executor.detached ? this.jobs.dispatchEach(chunk.jobIds) : this.runChunk(chunk);
    await this.room();
    if (this.stopping) throw new WorkerStopping('the worker is shutting down; the jobs stay queued');
    const { jobs: claimed, picked } = await this.jobs.claimQueued(
      chunk.jobIds,
      this.instanceId,
      this.opts.concurrency - this.following.size,
    );
    const taken = new Set(claimed.map((j) => j.id));
    const rest = chunk.jobIds.filter((id) => !taken.has(id));
    if (!claimed.length && picked) return this.jobs.dispatchEach(rest);
    if (rest.length) await this.jobs.requeueChunk(chunk.batchId, rest);
    const group = new SubmitGroup(
      (spec, observer, retry) => executor.submit(spec, observer, retry),
      (specs, observers) => executor.submitMany!(specs, observers),
      claimed.length,
    );
    const follows = claimed.map((job) => {
      const follow = this.follow(job, false, group.submit);
      void follow.started.finally(() => group.leave());
      return follow;
    });
    await Promise.all(follows.map((f) => (executor.detached ? f.started : f.done)));
  }

  /**
   * A batch's chunk on the local executor, run by this worker: its queued jobs are claimed a set
   * at a time (one statement), as many as it has slots for plus as many as it finishes in about
   * LOOKAHEAD_MS at the batch's pace here, so that the processes start back to back; their moves
   * are written in sets too (JobService.transitionInSet). The task claims for at most SLICE_MS
   * (once the jobs are long, one set), gives the rest back to the queue as a chunk, and returns
   * without waiting for its jobs: the queue's other tasks get their turn, and no set is claimed
   * while an interactive job's task waits for a slot.
   */
  private async runChunk(chunk: BatchChunk): Promise<void> {
    const began = Date.now();
    let rest = chunk.jobIds;
    let claimedAny = false;
    while (rest.length && !this.stopping) {
      const ahead = this.lookahead(chunk.batchId);
      const yielding = this.waiting.length > 0;
      // Jobs that ran already and wait for their end to be written take no slot of the executor.
      const held = this.following.size - this.finishing.size;
      if (yielding || held >= this.opts.concurrency + Math.floor((ahead ?? 0) / 2)) {
        // Long jobs (no lookahead) hand the queue slot back at once; short ones after SLICE_MS.
        if (claimedAny && (ahead === 0 || yielding || Date.now() - began > SLICE_MS)) break;
        await new Promise<void>((resolve) => this.chunkWaiters.push(resolve));
        continue;
      }
      const room = this.opts.concurrency + (ahead ?? 0) - held;
      // From the chunk's next ids only: a claim reads its window, not the whole chunk.
      const window = rest.slice(0, 2 * room + 16);
      const { jobs, picked } = await this.jobs.claimQueued(window, this.instanceId, room);
      if (!jobs.length) {
        // A quota holds them: as single jobs, they wait for it.
        if (picked) return this.jobs.dispatchEach(rest);
        // None of the window is queued any more (canceled, or claimed by another worker).
        rest = rest.slice(window.length);
        continue;
      }
      claimedAny = true;
      const taken = new Set(jobs.map((j) => j.id));
      rest = rest.filter((id) => !taken.has(id));
      for (const job of jobs) {
        const follow = this.follow(job, false, undefined, true);
        void follow.ran.then(() => {
          // (A job done without having run, as one that failed to start, is no longer followed.)
          if (this.following.get(job.id) === follow) this.finishing.add(follow);
          this.wakeChunks();
        });
        void follow.done.then(() => {
          this.finishing.delete(follow);
          this.paced(chunk.batchId);
        });
      }
    }
    if (!claimedAny && this.stopping)
      throw new WorkerStopping('the worker is shutting down; the jobs stay queued');
    if (rest.length) await this.jobs.requeueChunk(chunk.batchId, rest);
  }

  /**
   * How many jobs of the batch to claim beyond the free slots (LOOKAHEAD_MS at its pace here);
   * null while its pace is not known yet.
   */
  private lookahead(batchId: string): number | null {
    const interval = this.paces.get(batchId)?.interval;
    if (!interval) return null;
    return Math.min(MAX_LOOKAHEAD, Math.floor(LOOKAHEAD_MS / interval));
  }

  /**
   * A job of the batch ended here: its pace, the time per end over the last PACE_WINDOW_MS (ends
   * come in bunches, as their moves are written in sets).
   */
  private paced(batchId: string): void {
    const at = performance.now();
    let pace = this.paces.get(batchId);
    if (!pace) {
      if (this.paces.size >= PACES_KEPT) this.paces.delete(this.paces.keys().next().value!);
      this.paces.set(batchId, (pace = { since: at, ends: 0, interval: null }));
    }
    pace.ends++;
    const elapsed = at - pace.since;
    if (pace.ends >= PACE_MIN_ENDS) pace.interval = elapsed / pace.ends;
    if (elapsed > PACE_WINDOW_MS) Object.assign(pace, { since: at, ends: 0 });
  }

  /** Waits while this worker follows as many jobs as it may. */
  private async room(): Promise<void> {
    while (!this.stopping && this.following.size >= this.opts.concurrency)
      await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /** A slot may be free: the first task waiting looks, and the local chunks do. */
  private wakeOne(): void {
    this.waiting.shift()?.();
    this.wakeChunks();
  }

  private wakeChunks(): void {
    for (const wake of this.chunkWaiters.splice(0)) wake();
  }

  /** `inSets`: its moves written with others' (a local batch's chunk). */
  private follow(job: Job, adopting: boolean, submit?: SubmitFn, inSets = false): JobFollow {
    const follow = new JobFollow(this.context, job, adopting, submit, inSets);
    this.following.set(job.id, follow);
    void follow.done.then(() => {
      if (this.following.get(job.id) === follow) this.following.delete(job.id);
      this.wakeOne();
    });
    return follow;
  }

  private async writePendingNotes(): Promise<void> {
    const notes = this.pendingNotes;
    this.pendingNotes = new Map();
    await this.jobs.notePending(notes);
  }

  /** Reconciles now (JobReconciler), unless this worker cannot trust its own heartbeat. */
  async reconcile(): Promise<void> {
    if (Date.now() - this.lastBeat > OWN_BEAT_TRUST_MS) return;
    await this.reconciler.reconcile();
  }

  /** A cluster job of a worker that is gone: this worker follows it from now on (or stops it). */
  private async takeOver(row: FollowedRow): Promise<void> {
    if (this.following.size >= this.opts.concurrency) return; // the rest is for other workers
    this.following.set(row.id, null);
    try {
      const job = await this.jobs.takeOver(row.id, row.worker_id, this.instanceId);
      if (!job) return;
      this.log.info(
        { jobId: job.id, externalId: job.externalId, from: row.worker_id, status: job.status },
        'took over a job of a worker that is gone',
      );
      const follow = this.follow(job, true);
      if (job.status === 'canceled') follow.stop();
    } finally {
      if (this.following.get(row.id) === null) this.following.delete(row.id);
    }
  }
}
