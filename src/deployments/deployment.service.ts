import type { MikroORM } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { assertOwned, ownedBy, ownerOf, type Principal } from '../auth/principal';
import type { AuditLog } from '../teams/audit.service';
import { authorize } from '../teams/team.roles';
import type { Config } from '../config';
import { limitKey, type RateLimit } from '../rate-limits/rate-limiter';
import { AppError } from '../common/errors';
import { isUuid } from '../common/ids';
import { queryRows, readByIds } from '../db/rows';
import { findPage, type Page, type PageArgs } from '../common/pagination';
import { CHANNELS } from '../events/event-bus';
import { buildArgv } from '../models/model.command';
import { Job, type JobInput } from '../jobs/job.entity';
import { DISPATCH_TASK, deadlineTaskSql, jobEventSql, queuedCopySql } from '../jobs/job.queue';
import { isTerminal } from '../jobs/job.states';
import { MAX_WAIT_SECONDS, type JobWaiter } from '../jobs/job.wait';
import { parseDuration } from '../common/duration';
import type { IdempotentCreation } from '../graphql/graphql.context';
import type { LocalWorker } from '../jobs/job.claim';
import type { JobLifecycle } from '../jobs/job.lifecycle';
import { storageKey } from '../media/media.entity';
import type { MediaService } from '../media/media.service';
import type { Model } from '../models/model.entity';
import { RUN_COUNT_INCREMENT, type ModelService } from '../models/model.service';
import { validateName } from '../teams/team.service';
import { User } from '../users/user.entity';
import type { WebhookService } from '../webhooks/webhook.service';
import { checkArgs } from './deployment.args';
import { Deployment } from './deployment.entity';

export interface CreateDeploymentInput {
  name: string;
  modelId: string;
  args?: unknown;
  /** `Cancel-After`: a duration (`30s`, `5m`, `1h30m`) after which the job is canceled if unfinished. */
  cancelAfter?: string | null;
  /** Where its jobs' events are POSTed, and which (docs/webhooks.md). */
  webhook?: string | null;
  webhookEventsFilter?: readonly string[] | null;
}

export { DISPATCH_TASK } from '../jobs/job.queue';

/** What a deployment is called among the things made under an Idempotency-Key. */
const IDEMPOTENT_KIND = 'deployment';

/** Bounds of `Cancel-After`. */
const MIN_CANCEL_AFTER_MS = 1000;
const MAX_CANCEL_AFTER_MS = 7 * 24 * 3600_000;

/** `Cancel-After` in seconds, or VALIDATION_FAILED; undefined when not given. */
export function cancelAfterSeconds(text: string | null | undefined): number | null {
  if (text === undefined || text === null || text === '') return null;
  const ms = parseDuration(text.trim());
  if (ms === null || ms < MIN_CANCEL_AFTER_MS || ms > MAX_CANCEL_AFTER_MS)
    throw AppError.validation({
      cancelAfter: 'must be a duration such as 30s, 5m or 1h30m, from 1s to 7 days',
    });
  return ms / 1000;
}

export class DeploymentService {
  /** The worker of this process, when it has one that may claim the jobs created here. */
  private worker: LocalWorker | null = null;

  constructor(
    private readonly orm: MikroORM,
    private readonly config: Pick<
      Config,
      | 'executor'
      | 'localExecutorTrust'
      | 'adminSubjects'
      | 'jobsDir'
      | 'machineTypes'
      | 'slurmContainerRuntime'
    >,
    private readonly models: ModelService,
    private readonly media: MediaService,
    private readonly waiter: JobWaiter,
    private readonly webhooks: WebhookService,
    /** Deployments per principal per minute (`RATE_LIMIT_DEPLOYMENTS_PER_MINUTE`); null: none. */
    private readonly limit: RateLimit | null = null,
    private readonly lifecycle: JobLifecycle | null = null,
    /** Deployments and retries for a team leave audit records, in their own statements. */
    private readonly audit: AuditLog | null = null,
  ) {}

  /**
   * Jobs created from now on are claimed by `worker` (this process's) in their creating statement
   * while it has a free slot, instead of going through the queue; null: always queued.
   */
  claimIn(worker: LocalWorker | null): void {
    this.worker = worker;
  }

  /**
   * Where a job's processes run and write, one directory per job under JOBS_DIR: on the worker's
   * host, and for a cluster on a file system the compute nodes share.
   */
  workDirOf(jobId: string): string {
    return path.join(this.config.jobsDir, jobId);
  }

  /**
   * Validates the arguments against the model, builds the command, and in one statement records
   * the deployment and its queued job, counts the run and enqueues the dispatch. Any failure
   * creates nothing.
   */
  async create(
    principal: Principal,
    input: CreateDeploymentInput,
    opts: { waitSeconds?: number | null; idempotency?: IdempotentCreation } = {},
  ): Promise<{ deployment: Deployment; job: Job }> {
    authorize(principal, 'write', 'create deployments');
    const wait = opts.waitSeconds ?? 0;
    if (!Number.isInteger(wait) || wait < 0 || wait > MAX_WAIT_SECONDS)
      throw AppError.validation({ wait: `must be an integer from 0 to ${MAX_WAIT_SECONDS} (seconds)` });
    // A repeat (same Idempotency-Key) of a request whose process died before storing its answer:
    // the deployment it made, rebuilt from the database, never a second one.
    const earlier = opts.idempotency?.previous(IDEMPOTENT_KIND);
    const created = earlier
      ? await this.madeEarlier(principal, earlier)
      : await this.insert(principal, input, opts.idempotency);
    // Synchronous runs: the answer waits (on the event bus, holding no connection) for the end.
    if (wait) await this.waiter.untilEnded(ownerOf(principal), created.job.id, wait * 1000);
    return created;
  }

  /** A deployment an earlier attempt of this request made, with its first job. */
  private async madeEarlier(principal: Principal, id: string): Promise<{ deployment: Deployment; job: Job }> {
    const deployment = await this.get(principal, id);
    const job = await this.orm.em
      .fork()
      .findOneOrFail(Job, { deployment: deployment.id }, { orderBy: { createdAt: 'asc', id: 'asc' } });
    return { deployment, job };
  }

  private async insert(
    principal: Principal,
    input: CreateDeploymentInput,
    idempotency: IdempotentCreation | undefined,
  ): Promise<{ deployment: Deployment; job: Job }> {
    await this.limit?.take(limitKey(principal, undefined), 'too many deployments; try again shortly');
    const name = validateName(input.name);
    const cancelAfter = cancelAfterSeconds(input.cancelAfter);
    const webhook = await this.webhooks.check(input);
    const model = await this.models.get(principal, input.modelId);
    this.assertMachineType(model);
    await this.assertRunnable(model);
    const { values, files } = checkArgs(model.args, input.args);
    const assets = await this.media.ownedLive(
      principal,
      files.map((f) => f.mediaId),
    );
    const foreign = files.filter((f) => !assets.has(f.mediaId));
    if (foreign.length)
      throw AppError.validation(
        Object.fromEntries(foreign.map((f) => [`args.${f.name}`, 'is not a media asset of yours'])),
      );

    const jobId = randomUUID();
    const inputs: JobInput[] = [...assets.values()].map((a) => ({
      mediaId: a.id,
      // Local storage is read in place by local jobs; otherwise the worker stages a copy into the
      // job's directory, its working directory, so the relative path holds on whichever host
      // runs it (a cluster's nodes see JOBS_DIR, not the service's media directory).
      path:
        (this.config.executor === 'local' ? this.media.localPathOf(a) : null) ??
        path.join('inputs', storageKey(a)),
    }));
    let argv: string[];
    try {
      argv = buildArgv(model.command, model.args, values, (id) => inputs.find((i) => i.mediaId === id)!.path);
    } catch (err) {
      throw new AppError('VALIDATION_FAILED', `this model cannot run: ${(err as Error).message}`, {
        modelId: (err as Error).message,
      });
    }

    const owner = ownerOf(principal);
    // Plain entity objects (ids and defaults live in the entities; the ORM's unit of work, which
    // would only hold them, cost more than building them), written below in one statement.
    const deployment = Object.assign(new Deployment(), {
      ownerType: owner.type,
      ownerId: owner.id,
      name,
      modelId: model.id,
      args: values,
      sourceAssetId: files[0]?.mediaId ?? null,
      webhook: webhook.webhook,
      webhookEventsFilter: webhook.events,
    });
    const job = Object.assign(new Job(), {
      id: jobId,
      deployment,
      modelId: model.id,
      ownerType: owner.type,
      ownerId: owner.id,
      executor: this.config.executor,
      argv,
      inputs,
      container: model.container,
      machineType: model.machineType,
      machineCount: model.machineCount,
      timeoutSeconds: model.timeoutSeconds,
      maxRetries: model.maxRetries,
    });
    // A worker of this process with a free slot claims the job in the same statement (`starting`,
    // no dispatch task): the queue's round trips and the claim's own statement are saved. The
    // claim commits before the program starts, as a claim through the queue does. While other
    // jobs are queued, it queues behind them (first come, first served).
    const claim = this.worker?.reserve(jobId) ?? null;
    // For a team, its audit record is one more part of the same statement.
    const audit = this.audit?.statementPart(
      principal,
      {
        action: 'deployment.created',
        targetType: 'deployment',
        targetId: deployment.id,
        details: { job_id: jobId, model_id: model.id },
      },
      'd',
    );
    const auditPart = audit ? `\n       a as (${audit.sql}),` : '';
    // The service's hottest write, in one round trip and atomically: the deployment, its job and
    // first transition (and, claimed, its second), the model's run count, the dispatch task unless
    // claimed (so a job is dispatched if and only if it was created), its deadline task and its
    // events, in order (sent on commit); and under an Idempotency-Key, the record that it was made.
    const made = idempotency?.record(IDEMPOTENT_KIND, deployment.id);
    let created: Record<string, unknown>[];
    try {
      created = await queryRows(
        this.orm.em,
        `with d as (
         insert into deployments (id, owner_type, owner_id, name, model_id, args, source_asset_id, target_asset_id,
                                  webhook, webhook_events_filter, created_at)
         values (?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?, ?::text[], ?) returning id),
       ${made ? `k as (${made.sql}),` : ''}${auditPart}
       w as (select ?::uuid as id where not exists (select 1 from jobs where status = 'queued')),
       j as (
         insert into jobs (id, deployment_id, model_id, owner_type, owner_id, status, worker_id, executor, argv, inputs,
                           container, machine_type, machine_count, timeout_seconds, max_retries, deadline_at,
                           log_tail, created_at, updated_at)
         select ?, d.id, ?, ?, ?, case when w.id is null then 'queued' else 'starting' end, w.id, ?, ?::jsonb, ?::jsonb,
                ?, ?, ?, ?, ?, now() + make_interval(secs => ?::double precision), '', now(), now()
                from d left join w on true
         returning *),
       t as (insert into job_transitions (job_id, from_status, to_status, at)
             select j.id, s.from_status, s.to_status, j.created_at
             from j, (values (1, null, 'queued'), (2, 'queued', 'starting')) as s(n, from_status, to_status)
             where s.n = 1 or j.worker_id is not null order by s.n
             returning id as seq, from_status, to_status),
       m as (${RUN_COUNT_INCREMENT}),
       q as (select case when j.worker_id is null then (select 1 from graphile_worker.add_job(?,
                      json_build_object('jobId', j.id::text), max_attempts => 5)) end,
                    ${deadlineTaskSql('j')} from j)
       select j.created_at, j.deadline_at, j.worker_id is not null as claimed,
              pg_notify(?, ${jobEventSql('j', 't.seq', 't.from_status', 't.to_status')})
       from j, t, q order by t.seq`,
        [
          deployment.id,
          owner.type,
          owner.id,
          name,
          model.id,
          JSON.stringify(values),
          deployment.sourceAssetId,
          deployment.targetAssetId,
          deployment.webhook,
          `{${deployment.webhookEventsFilter.join(',')}}`,
          deployment.createdAt,
          ...(made?.params ?? []),
          ...(audit?.params ?? []),
          claim?.workerId ?? null,
          jobId,
          model.id,
          owner.type,
          owner.id,
          job.executor,
          JSON.stringify(argv),
          JSON.stringify(inputs),
          job.container,
          job.machineType,
          job.machineCount,
          job.timeoutSeconds,
          job.maxRetries,
          cancelAfter,
          model.id,
          DISPATCH_TASK,
          CHANNELS.jobs,
        ],
        true,
      );
    } catch (err) {
      claim?.release();
      throw err;
    }
    const [first] = created;
    // Times on the database's clock, like every later transition of the job.
    job.createdAt = job.updatedAt = new Date(first.created_at as string);
    job.deadlineAt = first.deadline_at === null ? null : new Date(first.deadline_at as string);
    this.lifecycle?.created(job, deployment.id);
    if (claim && first.claimed) {
      job.status = 'starting';
      job.workerId = claim.workerId;
      this.lifecycle?.transitioned(job, 'queued');
      claim.follow(job);
    } else claim?.release();
    return { deployment, job };
  }

  /**
   * Runs a job that has ended once more: a new job of the same deployment with the same command
   * and inputs, linked to the first (`retryOf`), queued at once. The model must still exist and
   * be runnable here, and the inputs must still be there.
   */
  async retry(principal: Principal, jobId: string, opts: { cancelAfter?: string | null } = {}): Promise<Job> {
    authorize(principal, 'write', 'retry jobs');
    const cancelAfter = cancelAfterSeconds(opts.cancelAfter);
    // A retry runs a job like a new deployment does, so it spends the same allowance.
    await this.limit?.take(limitKey(principal, undefined), 'too many jobs started; try again shortly');
    const em = this.orm.em.fork();
    const job = assertOwned(
      isUuid(jobId) ? await em.findOne(Job, { id: jobId.toLowerCase() }) : null,
      principal,
      'job',
    );
    if (!isTerminal(job.status))
      throw new AppError('CONFLICT', `the job is ${job.status}; only a job that has ended can be retried`);
    const [model] = await this.models.byIds([job.modelId]);
    if (!model) throw new AppError('CONFLICT', 'the model of this job was deleted; it cannot run again');
    await this.assertRunnable(model);
    const live = await this.media.ownedLive(
      principal,
      job.inputs.map((i) => i.mediaId),
    );
    const gone = job.inputs.filter((i) => !live.has(i.mediaId));
    if (gone.length)
      throw new AppError(
        'CONFLICT',
        `the input media ${gone.map((i) => i.mediaId).join(', ')} no longer exists`,
      );
    const audit = this.audit?.statementPart(
      principal,
      { action: 'job.retried', targetType: 'job', details: { retry_of: job.id } },
      'r_job',
      'r_job.id::text',
    );
    const rows: Record<string, unknown>[] = await em.execute(
      `with src as (select j.*, null::uuid as new_id, 1 as new_attempt,
                           now() + make_interval(secs => ?::double precision) as new_deadline
                    from jobs j where j.id = ?),
       ${queuedCopySql('r', 'src')}${audit ? `, a as (${audit.sql})` : ''}
       select r_job.* from r_job, r_go`,
      [cancelAfter, job.id, ...(audit?.params ?? [])],
    );
    const retry = em.map(Job, rows[0]);
    this.lifecycle?.created(retry, retry.deployment.id);
    return retry;
  }

  async list(principal: Principal, args: PageArgs): Promise<Page<Deployment>> {
    return findPage(this.orm.em.fork(), Deployment, ownedBy(principal), args);
  }

  async get(principal: Principal, id: string): Promise<Deployment> {
    const deployment = isUuid(id)
      ? await this.orm.em.fork().findOne(Deployment, { id: id.toLowerCase() })
      : null;
    return assertOwned(deployment, principal, 'deployment');
  }

  /** Deployments by id, as plain read-only rows (the loader of every job list's `deployment`). */
  async byIds(ids: readonly string[]): Promise<Deployment[]> {
    return readByIds(this.orm, Deployment, ids);
  }

  /** With a machine types file, a model whose machine type has since been removed cannot run. */
  private assertMachineType(model: Model): void {
    const types = this.config.machineTypes;
    if (!types || types.has(model.machineType)) return;
    throw new AppError(
      'VALIDATION_FAILED',
      `this model cannot run: its machine type "${model.machineType}" is not defined any more`,
      {
        modelId: `its machine type "${model.machineType}" is not one of ${[...types.keys()].join(', ')} (MACHINE_TYPES_FILE); its owner must choose another`,
      },
    );
  }

  /**
   * The local executor, and Slurm without a container runtime, run commands as the service's
   * own user (here, or on the cluster's nodes), so by default they run only built-in models and
   * models of operators (ADMIN_SUBJECTS). In a container, any model may run.
   */
  private async assertRunnable(model: Model): Promise<void> {
    const direct =
      this.config.executor === 'local' ||
      (this.config.executor === 'slurm' && this.config.slurmContainerRuntime === 'none');
    if (!direct || this.config.localExecutorTrust === 'any' || model.builtin) return;
    if (model.ownerType === 'user' && model.ownerId) {
      const owner = await this.orm.em.fork().findOne(User, { id: model.ownerId });
      if (owner && this.config.adminSubjects.includes(owner.subject)) return;
    }
    throw new AppError(
      'FORBIDDEN',
      (this.config.executor === 'local'
        ? 'the local executor runs'
        : 'without a container runtime (SLURM_CONTAINER_RUNTIME=none), Slurm runs') +
        ' only built-in models and models of operators; ' +
        'an operator can run this one, or a single-user install can set LOCAL_EXECUTOR_TRUST=any',
    );
  }
}
