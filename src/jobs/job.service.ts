import {
  DEFAULT_PRICES,
  jobCost,
  machinePricesJson,
  type CostFacts,
  type JobCost,
  type PriceList,
} from '../common/price-list';
import { assertOwned, ownerOf, type Owner, type Principal } from '../common/principal';
import { authorize } from '../teams/team.roles';
import { AppError } from '../common/errors';
import { isUuid } from '../common/ids';
import type { Page, PageArgs } from '../common/pagination';
import type { Job, JobTransition } from './job.entity';
import { LOG_TAIL_BYTES, type LogLine } from './job.log';
import type { JobLifecycle } from './job.lifecycle';
import type { JobListFilter, JobListRead, JobQueries, JobRow } from './job.queries';
import type { FollowedRow, JobStore, TransitionFields } from './job.store';
import { isTerminal, type JobStatus } from './job.states';
import { TransitionSets } from './job.transition-sets';
import type { WebhookEvent } from './job.webhook-events';

export type JobFilter = JobListFilter;
/**
 * The jobs list's orders: newest first; by cost, most expensive first (`cost`) or cheapest first,
 * of ended jobs only (docs/governance.md, "Sorting by cost").
 */
export const JOB_ORDERS = ['created_at', 'cost', 'cost_asc'] as const;
export type JobOrder = (typeof JOB_ORDERS)[number];
export type { JobListRead, JobRow, TransitionFields };

/** The payload of a job event on CHANNELS.jobs. */
export interface JobEvent {
  jobId: string;
  ownerType: Owner['type'];
  ownerId: string;
  status: JobStatus;
  from: JobStatus | null;
  at: string;
  /** The transition's id: increasing, so a subscriber can tell what it has already seen. */
  seq: number;
  /** The job as the transition left it (see jobEventSql); absent from events re-read after a gap. */
  job?: JobSnapshot;
}

/**
 * A job's columns in its events, by their Job property names (`deploymentId` for the relation;
 * times as ISO text). The large ones are there only when small enough (see jobEventSql).
 */
export type JobSnapshot = Partial<Record<keyof Job | 'deploymentId', unknown>>;

/** How much of a job's output is kept for replay (`job_log_batches`); the last 64 KiB are in its log tail. */
export const STORED_LOG_BYTES = 8 * 1024 * 1024;

/** The webhook events a transition causes (`logs` come from published lines). */
function webhookEventsOf(to: JobStatus, f: TransitionFields): WebhookEvent[] {
  if (to === 'running') return ['start'];
  if (!isTerminal(to)) return [];
  const output = to === 'succeeded' && (f.output?.files.length || (f.output?.result ?? null) !== null);
  return output ? ['output', 'completed'] : ['completed'];
}

/**
 * The rules of a job's life: who may see and stop it, which moves are allowed, what each move
 * causes (webhook events, an automatic retry), and what this process says about it (JobLifecycle).
 * Its SQL is in JobStore and JobQueries.
 */
export class JobService {
  constructor(
    private readonly store: JobStore,
    private readonly queries: JobQueries,
    /** Told of each transition this process makes (log lines, metrics). */
    private readonly lifecycle: JobLifecycle | null = null,
    private readonly prices: PriceList = DEFAULT_PRICES,
  ) {}

  private readonly sets = new TransitionSets((to, moves, events) =>
    this.store.transitionSet(to, moves, events),
  );

  /** A job's cost from the fields its row already has (no query: lists price every row). */
  costOf(job: CostFacts): JobCost {
    return jobCost(this.prices, job);
  }

  /**
   * A page of the owner's jobs in one statement. `read` names the entity properties wanted of the
   * job and of the deployment and model to join (null: all of them; a nested one left out: not
   * joined); the properties of columns not read are left undefined.
   */
  async list(
    principal: Principal,
    filter: JobFilter,
    args: PageArgs,
    read: JobListRead = { job: null },
    order: JobOrder = 'created_at',
  ): Promise<Page<JobRow>> {
    if (filter.modelId && !isUuid(filter.modelId))
      throw AppError.validation({ modelId: 'must be a model id' });
    if (order === 'created_at') return this.queries.list(ownerOf(principal), filter, args, read);
    // The cost order merges per-machine-type index reads of all ended jobs; a filter would be
    // checked row by row with no bound on what a page reads (docs/governance.md).
    if (filter.status || filter.modelId || filter.batchId)
      throw AppError.validation({
        orderBy: 'cost orders all of your ended jobs: it takes no status or model filter',
      });
    return this.queries.list(ownerOf(principal), filter, args, read, {
      direction: order === 'cost' ? 'desc' : 'asc',
      prices: machinePricesJson(this.prices),
    });
  }

  async get(principal: Principal, id: string): Promise<Job> {
    return assertOwned(await this.byId(id), principal, 'job');
  }

  /** Any job by id, without an access check (workers and event feeds). */
  async byId(id: string): Promise<Job | null> {
    return isUuid(id) ? this.queries.byId(id.toLowerCase()) : null;
  }

  /** The jobs of deployments, newest first (a deployment has more than one once retried). */
  async byDeploymentIds(ids: readonly string[]): Promise<Job[]> {
    return this.queries.byDeploymentIds(ids);
  }

  /** The automatic retry queued when this job failed, if any. */
  async automaticRetryOf(jobId: string): Promise<string | null> {
    return this.queries.automaticRetryOf(jobId);
  }

  /** The deadline task (`Cancel-After`): a job that has not ended is canceled, saying why. */
  async cancelAtDeadline(jobId: string): Promise<void> {
    const job = await this.byId(jobId);
    if (!job?.deadlineAt || isTerminal(job.status)) return;
    await this.transition(job.id, 'canceled', {
      error: `canceled: it had not ended by its deadline (Cancel-After), ${job.deadlineAt.toISOString()}`,
    });
  }

  async transitionsOf(jobIds: readonly string[]): Promise<JobTransition[]> {
    return this.queries.transitionsOf(jobIds);
  }

  /**
   * Stops a job: `canceled` at once (the worker running it is told through the event); a job
   * that has ended already is answered as it is.
   */
  async cancel(principal: Principal, id: string): Promise<Job> {
    authorize(principal, 'write', 'cancel jobs');
    const job = await this.get(principal, id);
    if (isTerminal(job.status)) return job;
    // Not moved: it ended meanwhile, and is answered as it is (and no record is written).
    const acting = {
      caller: principal,
      action: { action: 'job.canceled', targetType: 'job', targetId: job.id },
    } as const;
    return (await this.transition(job.id, 'canceled', { acting })) ?? (await this.byId(job.id))!;
  }

  /**
   * Moves a job to `to` if its current state allows it (job.states.ts), in one statement with
   * what the move causes (JobStore.transition). Answers the job as it is now, or null when it
   * did not move: a job that has meanwhile gone elsewhere (say, canceled) is left alone.
   */
  async transition(jobId: string, to: JobStatus, fields: TransitionFields = {}): Promise<Job | null> {
    const moved = await this.store.transition(jobId, to, fields, webhookEventsOf(to, fields));
    if (!moved) return null;
    const { job, from, retryId } = moved;
    this.lifecycle?.transitioned(job, from);
    // The automatic retry is a copy of this job under another id (see queuedCopyCtes).
    if (retryId) this.lifecycle?.created({ ...job, id: retryId }, job.deployment.id);
    return job;
  }

  /**
   * Claims for `workerId` up to `limit` of the jobs `jobIds` still queued, in one statement (a
   * batch's chunk, submitted together: JobRunner.dispatchChunk).
   */
  async claimQueued(
    jobIds: readonly string[],
    workerId: string,
    limit: number,
  ): Promise<{ jobs: Job[]; picked: number }> {
    if (limit <= 0 || !jobIds.length) return { jobs: [], picked: 0 };
    const claimed = await this.store.claimQueued(jobIds, workerId, limit);
    for (const job of claimed.jobs) this.lifecycle?.transitioned(job, 'queued');
    return claimed;
  }

  /**
   * As `transition` to `running` or `succeeded` (with its outputs published), written together
   * with the moves other jobs ask for meanwhile (TransitionSets): for the many short jobs of a
   * batch's chunk run by one worker.
   */
  async transitionInSet(
    jobId: string,
    to: 'running' | 'succeeded',
    fields: TransitionFields,
  ): Promise<Job | null> {
    const moved = await this.sets.request(jobId, to, fields, webhookEventsOf(to, fields));
    if (!moved) return null;
    this.lifecycle?.transitioned(moved.job, moved.from);
    return moved.job;
  }

  /** One dispatch task per job of `jobIds` still queued (a chunk for an executor without `submitMany`). */
  async dispatchEach(jobIds: readonly string[]): Promise<void> {
    await this.store.dispatchEach(jobIds);
  }

  /** The jobs of `jobIds` still queued, back to the queue as one chunk of the batch `batchId`. */
  async requeueChunk(batchId: string, jobIds: readonly string[]): Promise<void> {
    await this.store.requeueChunk(batchId, jobIds);
  }

  /**
   * The best queued job by fair share, moved to `starting` for the worker `workerId` (a dispatch
   * task's claim, docs/governance.md); null when no job may start now.
   */
  async claimNext(workerId: string): Promise<Job | null> {
    const job = await this.store.claimNext(workerId);
    if (job) this.lifecycle?.transitioned(job, 'queued');
    return job;
  }

  /** Of the jobs `ids`, the queued ones' position in their owner's queue and quota reason. */
  async queueInfo(
    ids: readonly string[],
    cap: number,
  ): Promise<Map<string, { position: number | null; reason: string | null }>> {
    return this.store.queueInfo(ids, cap);
  }

  /**
   * A job and the id of its latest transition (see JobEvent.seq), in one statement: read apart,
   * the two could disagree about a job that moves meanwhile.
   */
  async withLastTransition(id: string): Promise<{ job: Job; seq: number } | null> {
    return this.queries.withLastTransition(id);
  }

  /** The id of the latest transition of any job. */
  async lastTransitionId(): Promise<number> {
    return this.queries.lastTransitionId();
  }

  /**
   * Transitions after `afterSeq` of the given owners' jobs and of the given jobs (of every job
   * when `of` is null), in order, as events without the job's columns (a subscriber that needs
   * them reads the job as it is now).
   */
  async transitionsAfter(
    afterSeq: number,
    of: { owners: readonly string[]; jobIds: readonly string[] } | null,
  ): Promise<JobEvent[]> {
    const rows = await this.queries.transitionsAfter(afterSeq, of);
    return rows.map((r) => ({
      jobId: r.job_id as string,
      ownerType: r.owner_type as Owner['type'],
      ownerId: r.owner_id as string,
      status: r.to_status as JobStatus,
      from: r.from_status as JobStatus | null,
      at: new Date(r.at as string).toISOString(),
      seq: Number(r.seq),
    }));
  }

  /**
   * Publishes a batch of a running job's lines (CHANNELS.jobLogs), in one statement: the batch is
   * kept for replay while the job's kept output is under STORED_LOG_BYTES, takes its id from the
   * transitions' sequence (`seq`), and a `logs` webhook message is scheduled when one is wanted.
   */
  async publishLines(job: Pick<Job, 'id' | 'ownerType' | 'ownerId'>, lines: LogLine[]): Promise<void> {
    const event = JSON.stringify({ jobId: job.id, ownerType: job.ownerType, ownerId: job.ownerId, lines });
    await this.store.publishLines(job.id, JSON.stringify(lines), event, STORED_LOG_BYTES);
  }

  /**
   * A detached executor has the job (still `starting`, perhaps waiting for resources): its handle
   * is recorded at once, so that a worker taking the job over follows it instead of submitting it.
   */
  async recordSubmission(jobId: string, workerId: string, externalId: string): Promise<void> {
    await this.store.recordSubmission(jobId, workerId, externalId);
  }

  /**
   * Why submitted jobs still wait, in the cluster's words (not a transition). One statement for
   * many jobs: a poll may change the reasons of thousands at once.
   */
  async notePending(reasons: ReadonlyMap<string, string | null>): Promise<void> {
    if (!reasons.size) return;
    await this.store.notePending(reasons);
  }

  /**
   * The last LOG_TAIL_BYTES of what a job printed, from its published lines, when all of them were
   * kept (null otherwise): current to the last batch, where the stored tail is saved every 5 s.
   */
  async recentLogTail(jobId: string): Promise<string | null> {
    const rows = await this.queries.lastLines(jobId, LOG_TAIL_BYTES + 8000);
    if (!rows.length) return '';
    // Batches are kept up to STORED_LOG_BYTES: past it, the latest lines are not among them.
    if (rows[0].kept + 8000 > STORED_LOG_BYTES) return null;
    const lines: string[] = [];
    let bytes = 0;
    for (const { line } of rows) {
      bytes += Buffer.byteLength(line) + 1;
      if (bytes > LOG_TAIL_BYTES && lines.length) break;
      lines.unshift(line);
    }
    return lines.join('\n');
  }

  /**
   * Moves a job that `from` (a worker that is gone, or none) was following to `to`; only one
   * worker gets it. Answers the job, or null when another worker was faster or it has ended.
   */
  async takeOver(jobId: string, from: string | null, to: string): Promise<Job | null> {
    return this.store.takeOver(jobId, from, to);
  }

  /** Jobs some worker should follow, except those of the live workers `others` (reconciliation). */
  async followedExcept(others: readonly string[]): Promise<FollowedRow[]> {
    return this.store.followedExcept(others);
  }

  /** Nothing of the job is left on the executor: no worker needs to follow it any more. */
  async releaseWorker(jobId: string, workerId: string): Promise<void> {
    await this.store.releaseWorker(jobId, workerId);
  }

  /** Keeps the stored log tail current while a job runs (not a transition). */
  async saveLogTail(jobId: string, logTail: string): Promise<void> {
    await this.store.saveLogTail(jobId, logTail);
  }
}
