import { ArrayType, Entity, Index, ManyToOne, PrimaryKey, Property, type Opt } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { OwnerType } from '../common/principal';
import { Deployment } from './deployment.entity';
import type { JobStatus } from './job.states';

/** What a finished job produced: its files (as media assets) and the JSON it printed last. */
export interface JobOutput {
  files: { mediaId: string; name: string; mediaKey: string; contentType: string; size: number }[];
  result: unknown;
}

/** A media asset the job reads, and the path its program is given for it. */
export interface JobInput {
  mediaId: string;
  path: string;
}

/**
 * The state of one deployment on an executor. What it runs is fixed when it is created (argv,
 * container, machine, timeout), so later changes to the model never change a queued job.
 */
@Entity({ tableName: 'jobs' })
@Index({ properties: ['ownerType', 'ownerId', 'createdAt', 'id'] })
// The jobs list by status and by model, each in the list's order (JobQueries.list).
@Index({
  name: 'jobs_owner_status_created_at_index',
  properties: ['ownerType', 'ownerId', 'status', 'createdAt', 'id'],
})
@Index({
  name: 'jobs_owner_model_created_at_index',
  properties: ['ownerType', 'ownerId', 'modelId', 'createdAt', 'id'],
})
@Index({ properties: ['modelId'] })
@Index({ properties: ['deployment'] })
@Index({
  name: 'jobs_retry_of_index',
  expression: `create index "jobs_retry_of_index" on "jobs" ("retry_of") where "retry_of" is not null`,
})
// Billing (src/billing/billing.sql.ts): jobs shorter than a day by start, longer and running ones apart.
@Index({
  name: 'jobs_billing_started_index',
  expression: `create index "jobs_billing_started_index" on "jobs" ("owner_type", "owner_id", "started_at") include ("finished_at", "machine_type", "machine_count", "model_id") where "started_at" is not null`,
})
@Index({
  name: 'jobs_billing_long_index',
  expression: `create index "jobs_billing_long_index" on "jobs" ("owner_type", "owner_id", "started_at") include ("finished_at", "machine_type", "machine_count", "model_id") where "started_at" is not null and ("finished_at" is null or "finished_at" - "started_at" >= interval '1 day')`,
})
// A batch's counts by state (a GROUP BY over this index) and its jobs by state, newest first.
@Index({ name: 'jobs_batch_status_index', properties: ['batch', 'status', 'createdAt', 'id'] })
// What an owner's unfinished jobs may still cost, read by every budget check (docs/governance.md).
@Index({
  name: 'jobs_unfinished_owner_index',
  expression: `create index "jobs_unfinished_owner_index" on "jobs" ("owner_type", "owner_id") include ("machine_type", "machine_count", "timeout_seconds", "started_at") where "status" in ('queued', 'starting', 'running')`,
})
// A batch's jobs, newest first, whatever their state (without it, the owner's index walked all
// the owner's newer jobs to reach an old batch's).
@Index({
  name: 'jobs_batch_created_at_index',
  expression: `create index "jobs_batch_created_at_index" on "jobs" ("batch_id", "created_at", "id") where "batch_id" is not null`,
})
// A batch's items in order (its results zip reads them by ranges of items).
@Index({
  name: 'jobs_batch_item_index',
  expression: `create index "jobs_batch_item_index" on "jobs" ("batch_id", "batch_item") where "batch_id" is not null`,
})
// The queue's depth and oldest age (metrics) without reading ended jobs.
@Index({
  name: 'jobs_queued_index',
  expression: `create index "jobs_queued_index" on "jobs" ("created_at") where "status" = 'queued'`,
})
// Jobs a worker follows, or must still stop on the executor (canceled while their worker was gone).
@Index({
  name: 'jobs_followed_index',
  expression: `create index "jobs_followed_index" on "jobs" ("worker_id") where "status" in ('starting', 'running') or ("status" = 'canceled' and "worker_id" is not null)`,
})
// The dispatch's claim (job.dispatch.sql.ts): one skip-scan step per owner and machine type, the
// group's next job first (docs/governance.md, "Fair share").
@Index({
  name: 'jobs_dispatch_index',
  expression: `create index "jobs_dispatch_index" on "jobs" ("owner_type", "owner_id", "machine_type", "priority_rank" desc, "created_at", "id") where "status" = 'queued'`,
})
// A queued job's position in its owner's queue.
@Index({
  name: 'jobs_owner_queue_index',
  expression: `create index "jobs_owner_queue_index" on "jobs" ("owner_type", "owner_id", "priority_rank" desc, "created_at", "id") where "status" = 'queued'`,
})
// The jobs list by cost (JobQueries.costPage): each machine type's ended jobs by machine time,
// merged across types by price (docs/governance.md, "Sorting by cost").
@Index({
  name: 'jobs_owner_cost_index',
  expression: `create index "jobs_owner_cost_index" on "jobs" ("owner_type", "owner_id", "machine_type", "machine_micros" desc, "id" desc) where "machine_micros" is not null`,
})
export class Job {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Deployment, { deleteRule: 'cascade' })
  deployment!: Deployment;

  @Property({ type: 'uuid' })
  modelId!: string;

  /** The model version it runs (null only for jobs made before versions existed). */
  @Property({ type: 'uuid', nullable: true })
  modelVersionId: string | null = null;

  /** The names of the owner's secrets it gets (docs/secrets.md); the values are opened at dispatch. */
  @Property({ type: ArrayType, default: '{}' })
  secrets: Opt<string[]> = [];

  @Property({ type: 'text' })
  ownerType!: OwnerType;

  @Property({ type: 'uuid' })
  ownerId!: string;

  @Property({ type: 'text' })
  status: Opt<JobStatus> = 'queued';

  @Property({ type: 'text' })
  executor!: string;

  /** The executor's handle: a process id, a Slurm job id, a pod name. */
  @Property({ type: 'text', nullable: true })
  externalId: string | null = null;

  /**
   * The worker process that follows the job on its executor; its heartbeat tells whether it
   * still does. Null once nothing on the executor needs following: before the claim, and after
   * the end (a canceled job keeps it until its worker has stopped it on the executor).
   */
  @Property({ type: 'uuid', nullable: true })
  workerId: string | null = null;

  /** Where it ran: host names, or Slurm host lists such as `gpu[01-04]`. */
  @Property({ type: 'json', default: '[]' })
  nodes: Opt<string[]> = [];

  /** While `starting` on a cluster: why it waits, in the cluster's words (`Resources`, `Priority`). */
  @Property({ type: 'text', nullable: true })
  pendingReason: string | null = null;

  @Property({ type: 'json' })
  argv!: string[];

  /** Files to have in place before the program starts (staged from storage when not local). */
  @Property({ type: 'json', default: '[]' })
  inputs: Opt<JobInput[]> = [];

  @Property({ type: 'text' })
  container!: string;

  @Property({ type: 'text' })
  machineType!: string;

  @Property({ type: 'integer' })
  machineCount!: number;

  /**
   * Order among its owner's queued jobs, higher first (then age): PRIORITY_RANKS of its
   * deployment's priority. Steps of 10 leave room between them (a batch's items, one below).
   */
  @Property({ type: 'smallint', default: 20 })
  priorityRank: Opt<number> = 20;

  /** When a worker claimed it (`starting`): its fair-share usage counts from then. */
  @Property({ type: 'datetime', nullable: true })
  claimedAt: Date | null = null;

  @Property({ type: 'integer' })
  timeoutSeconds!: number;

  /** Copied from the model: automatic retries after infrastructure failures. */
  @Property({ type: 'integer', default: 0 })
  maxRetries: Opt<number> = 0;

  /** 1, plus the automatic retries before this job (a manual retry starts again at 1). */
  @Property({ type: 'integer', default: 1 })
  attempt: Opt<number> = 1;

  /** The job this one retries, manually or automatically. */
  @Property({ type: 'uuid', nullable: true })
  retryOf: string | null = null;

  /**
   * The batch it is an item of (src/batches), or null. By the entity's name: the batches module
   * sits above this one and is not imported here.
   */
  @ManyToOne({ entity: 'Batch', nullable: true, mapToPk: true, deleteRule: 'cascade' })
  batch: string | null = null;

  /** Its item's place in the batch's request (0-based; a retry keeps it): names its results. */
  @Property({ type: 'integer', nullable: true })
  batchItem: number | null = null;

  /** Set when it failed because of the infrastructure, not the program (`JobExit.infrastructure`). */
  @Property({ type: 'boolean', default: false })
  infrastructureFailure: Opt<boolean> = false;

  /** `Cancel-After`: canceled when it has not ended by then, queue time included. */
  @Property({ type: 'datetime', nullable: true })
  deadlineAt: Date | null = null;

  @Property({ type: 'integer', nullable: true })
  exitCode: number | null = null;

  @Property({ type: 'text', nullable: true })
  error: string | null = null;

  /** The last lines the job printed (at most LOG_TAIL_BYTES). */
  @Property({ type: 'text', default: '' })
  logTail: Opt<string> = '';

  /** From creation to start. */
  @Property({ type: 'double', nullable: true })
  queueSeconds: number | null = null;

  /** From start to end; what compute is billed on. */
  @Property({ type: 'double', nullable: true })
  runSeconds: number | null = null;

  /**
   * Once ended: machine_count x run time in microseconds (0 if it never ran), exact as billing's
   * sums; its cost is this times the machine type's price. Set by the statement that ends it.
   */
  @Property({ type: 'bigint', nullable: true })
  machineMicros: string | null = null;

  @Property({ type: 'json', nullable: true })
  output: JobOutput | null = null;

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime', nullable: true })
  startedAt: Date | null = null;

  @Property({ type: 'datetime', nullable: true })
  finishedAt: Date | null = null;

  @Property({ type: 'datetime' })
  updatedAt: Opt<Date> = new Date();
}

/** Every state change of a job, with its time. */
@Entity({ tableName: 'job_transitions' })
@Index({ properties: ['job', 'at'] })
export class JobTransition {
  @PrimaryKey({ type: 'bigint', autoincrement: true })
  id!: string;

  @ManyToOne(() => Job, { deleteRule: 'cascade' })
  job!: Job;

  @Property({ type: 'text', nullable: true })
  fromStatus: JobStatus | null = null;

  @Property({ type: 'text' })
  toStatus!: JobStatus;

  @Property({ type: 'datetime' })
  at: Opt<Date> = new Date();
}

/** A worker process; jobs of one whose heartbeat stopped are reconciled by the others. */
@Entity({ tableName: 'worker_instances' })
export class WorkerInstance {
  @PrimaryKey({ type: 'uuid' })
  id!: string;

  @Property({ type: 'text' })
  host!: string;

  @Property({ type: 'integer' })
  pid!: number;

  @Property({ type: 'datetime' })
  startedAt: Opt<Date> = new Date();

  @Property({ type: 'datetime' })
  seenAt: Opt<Date> = new Date();

  /**
   * The graphile-worker ids of its queue runners: the tasks they hold locked are unlocked once
   * this worker is found gone (graphile-worker itself would keep them for 4 hours).
   */
  @Property({ type: ArrayType, columnType: 'text[]', default: '{}' })
  queueWorkers: Opt<string[]> = [];
}

/**
 * A batch of log lines as it was published, kept for replay (server-sent events resume after an
 * id). Its id comes from the transitions' sequence, so a job's transitions and lines share one
 * order. At most STORED_LOG_BYTES of a job's output are kept; `total_bytes` counts them.
 */
@Entity({ tableName: 'job_log_batches' })
@Index({ properties: ['job', 'id'] })
export class JobLogBatch {
  @PrimaryKey({ type: 'bigint', autoincrement: false })
  id!: string;

  @ManyToOne(() => Job, { deleteRule: 'cascade' })
  job!: Job;

  /** `[{stream, line}]`, as published. */
  @Property({ type: 'json' })
  lines!: { stream: 'stdout' | 'stderr'; line: string }[];

  @Property({ type: 'integer' })
  totalBytes!: number;

  @Property({ type: 'datetime' })
  at: Opt<Date> = new Date();
}

/**
 * Per owner, what the dispatch weighs and the quotas count (docs/governance.md): the usage decayed
 * to `decayed_at`, and the jobs and machines in use now. Kept by the statements that claim and end
 * jobs (JobStore), never summed over jobs.
 */
@Entity({ tableName: 'owner_usage' })
export class OwnerUsage {
  @PrimaryKey({ type: 'text' })
  ownerType!: OwnerType;

  @PrimaryKey({ type: 'uuid' })
  ownerId!: string;

  /** Machine-seconds of the jobs that ended, decayed with FAIR_SHARE_HALF_LIFE_HOURS to `decayedAt`. */
  @Property({ type: 'double', default: 0 })
  usage: Opt<number> = 0;

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  decayedAt: Opt<Date> = new Date();

  /** Jobs claimed and not ended (`starting`, `running`). */
  @Property({ type: 'integer', default: 0 })
  runningJobs: Opt<number> = 0;

  /** Machines of those jobs, by machine type. */
  @Property({ type: 'json', default: '{}' })
  runningMachines: Opt<Record<string, number>> = {};

  /** Sum of machine_count x claimed_at (epoch seconds) of those jobs: their usage so far without reading them. */
  @Property({ type: 'double', default: 0 })
  runningStartedSum: Opt<number> = 0;
}
