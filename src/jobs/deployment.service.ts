import type { MikroORM } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { assertOwned, ownerOf, type Owner, type Principal } from '../common/principal';
import { authorize } from '../teams/team.roles';
import type { Config } from '../config';
import { limitKey, type RateLimit } from '../rate-limits/rate-limiter';
import { AppError } from '../common/errors';
import { isUuid } from '../common/ids';
import type { Page, PageArgs } from '../common/pagination';
import { parseDuration } from '../common/duration';
import { Sql, type StatementPart } from '../db/sql';
import type { IdempotentCreation } from '../common/idempotent-creation';
import { storageKey } from '../media/media.entity';
import type { MediaService } from '../media/media.service';
import { buildArgv } from '../models/model.command';
import type { Model } from '../models/model.entity';
import type { ModelService } from '../models/model.service';
import type { SecretService } from '../secrets/secret.service';
import { validateName } from '../teams/team.service';
import { User } from '../users/user.entity';
import { checkArgs } from './deployment.args';
import { Deployment, PRIORITIES, PRIORITY_RANKS, type Priority } from './deployment.entity';
import { Job, type JobInput } from './job.entity';
import type { LocalClaims } from './job.claim';
import type { JobLifecycle } from './job.lifecycle';
import type { JobQueries } from './job.queries';
import type { JobStore, NewItems } from './job.store';
import { isTerminal } from './job.states';
import { MAX_WAIT_SECONDS, type JobWaiter } from './job.wait';
import type { WebhookEvent } from './job.webhook-events';

export interface CreateDeploymentInput {
  name: string;
  modelId: string;
  /** The model's version to run; default its latest. */
  versionId?: string | null;
  args?: unknown;
  /** `Cancel-After`: a duration (`30s`, `5m`, `1h30m`) after which the job is canceled if unfinished. */
  cancelAfter?: string | null;
  /** Where its jobs' events are POSTed, and which (docs/webhooks.md). */
  webhook?: string | null;
  webhookEventsFilter?: readonly string[] | null;
  /** Order among the owner's jobs (docs/governance.md); default normal. */
  priority?: Priority | null;
}

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

/**
 * The priority asked for, checked: `high` for a team is for its admins and owners (a member's
 * jobs would otherwise jump the team's own queue at will).
 */
export function priorityOf(principal: Principal, priority: Priority | null | undefined): Priority {
  const p = priority ?? 'normal';
  if (!PRIORITIES.includes(p))
    throw AppError.validation({ priority: `must be one of ${PRIORITIES.join(', ')}` });
  if (p === 'high') authorize(principal, 'manage', 'create high-priority deployments');
  return p;
}

/** A deployment's webhook settings, checked (WebhookService, wired in server/services.ts). */
export interface WebhookCheck {
  check(input: {
    webhook?: string | null;
    webhookEventsFilter?: readonly string[] | null;
  }): Promise<{ webhook: string | null; events: WebhookEvent[] }>;
}

/** The owner's budget, asked before jobs are made (BudgetService, wired in server/services.ts). */
export interface BudgetCheck {
  maxCostOf(job: Pick<Job, 'machineType' | 'machineCount' | 'timeoutSeconds'>): string;
  /** Throws BUDGET_EXCEEDED (402) when `jobCount` jobs of at most `maxCostPerJob` could pass a blocking budget. */
  assertAllows(owner: Owner, maxCostPerJob: string, jobCount: number): Promise<void>;
}

/**
 * The rules of making jobs: a deployment and its first job (the arguments checked against the
 * model, the command built, who may run what), and a retry of a job that has ended. Its SQL is
 * in JobStore and JobQueries.
 */
export class DeploymentService {
  constructor(
    private readonly store: JobStore,
    private readonly queries: JobQueries,
    /** For the owners of models (who may run them). */
    private readonly orm: MikroORM,
    private readonly config: Pick<
      Config,
      'executor' | 'localExecutorTrust' | 'adminSubjects' | 'machineTypes' | 'slurmContainerRuntime'
    >,
    private readonly models: ModelService,
    private readonly media: MediaService,
    private readonly waiter: JobWaiter,
    private readonly webhooks: WebhookCheck,
    /** This process's worker's free slots, which claim jobs where they are created. */
    private readonly claims: LocalClaims | null = null,
    /** Deployments per principal per minute (`RATE_LIMIT_DEPLOYMENTS_PER_MINUTE`); null: none. */
    private readonly limit: RateLimit | null = null,
    private readonly lifecycle: JobLifecycle | null = null,
    /** Whether the owner has the secrets a model needs; null: models' secrets are not checked. */
    private readonly secrets: Pick<SecretService, 'missing'> | null = null,
    private readonly budget: BudgetCheck | null = null,
  ) {}

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
    return { deployment, job: await this.queries.firstJobOf(deployment.id) };
  }

  private async insert(
    principal: Principal,
    input: CreateDeploymentInput,
    idempotency: IdempotentCreation | undefined,
  ): Promise<{ deployment: Deployment; job: Job }> {
    await this.limit?.take(limitKey(principal, undefined), 'too many deployments; try again shortly');
    const { deployment, job, cancelAfter } = await this.prepare(principal, input);
    await this.budget?.assertAllows(ownerOf(principal), this.budget.maxCostOf(job), 1);
    // A worker of this process with a free slot claims the job in the same statement (`starting`,
    // no dispatch task): the queue's round trips and the claim's own statement are saved. The
    // claim commits before the program starts, as a claim through the queue does.
    const claim = this.claims?.reserve(job.id) ?? null;
    // Under an Idempotency-Key, the record that it was made is part of the same statement.
    const made = idempotency?.record(IDEMPOTENT_KIND, deployment.id);
    const parts: StatementPart[] = made
      ? [{ ctes: [{ name: 'k', sql: Sql.positional(made.sql, made.params) }] }]
      : [];
    let created: Awaited<ReturnType<JobStore['createDeployment']>>;
    try {
      created = await this.store.createDeployment({
        deployment,
        job,
        cancelAfter,
        claimFor: claim?.workerId ?? null,
        parts,
        // For a team, its audit record.
        acting: {
          caller: principal,
          action: {
            action: 'deployment.created',
            targetType: 'deployment',
            targetId: deployment.id,
            details: { job_id: job.id, model_id: job.modelId },
          },
        },
      });
    } catch (err) {
      claim?.release();
      throw err;
    }
    // Times on the database's clock, like every later transition of the job.
    job.createdAt = job.updatedAt = created.createdAt;
    job.deadlineAt = created.deadlineAt;
    this.lifecycle?.created(job, deployment.id);
    if (claim && created.claimed) {
      job.status = 'starting';
      job.workerId = claim.workerId;
      this.lifecycle?.transitioned(job, 'queued');
      claim.follow(job);
    } else claim?.release();
    return { deployment, job };
  }

  /**
   * A deployment and its job as `input` asks, checked (the name, the webhook, the model and
   * whether it may run here, the arguments against it, the media they name), with the command
   * built: plain entity objects, nothing written yet.
   */
  private async prepare(
    principal: Principal,
    input: CreateDeploymentInput,
  ): Promise<{ deployment: Deployment; job: Job; cancelAfter: number | null }> {
    const name = validateName(input.name);
    const priority = priorityOf(principal, input.priority);
    const cancelAfter = cancelAfterSeconds(input.cancelAfter);
    const webhook = await this.webhooks.check(input);
    // What runs is the version's (pinned, or the latest), never the model's row as it is now.
    const { model, version } = await this.models.runnable(principal, input.modelId, input.versionId);
    this.assertMachineType(version.machineType);
    await this.assertRunnable(model);
    await this.assertSecrets(ownerOf(principal), version.secrets);
    const { values, files } = checkArgs(version.args, input.args);
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
      argv = buildArgv(
        version.command,
        version.args,
        values,
        (id) => inputs.find((i) => i.mediaId === id)!.path,
      );
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
      priority,
    });
    const job = Object.assign(new Job(), {
      id: jobId,
      deployment,
      modelId: model.id,
      modelVersionId: version.id,
      secrets: version.secrets,
      ownerType: owner.type,
      ownerId: owner.id,
      executor: this.config.executor,
      argv,
      inputs,
      container: version.container,
      machineType: version.machineType,
      machineCount: version.machineCount,
      timeoutSeconds: version.timeoutSeconds,
      maxRetries: model.maxRetries,
      priorityRank: PRIORITY_RANKS[priority],
    });
    return { deployment, job, cancelAfter };
  }

  /**
   * A batch's items (docs/batches.md): each item's arguments (merged over `common`) checked
   * against the model like a deployment's, every problem named by item (`items[3].image`), the
   * media they name read in one query, each command built; nothing written. Answers the
   * model's settings the jobs copy and the items, for JobStore.createItems.
   */
  async prepareItems(
    principal: Principal,
    modelId: string,
    versionId: string | null,
    common: Record<string, unknown>,
    items: readonly Record<string, unknown>[],
    name: string,
    /** The file argument the media of the selection go to, checked to be one. */
    fileArg: string | null,
  ): Promise<Omit<NewItems, 'batchId' | 'parts' | 'acting'>> {
    // What runs is the version's (pinned, or the latest), as for a single deployment.
    const { model, version } = await this.models.runnable(principal, modelId, versionId);
    this.assertMachineType(version.machineType);
    await this.assertRunnable(model);
    await this.assertSecrets(ownerOf(principal), version.secrets);
    // The whole batch against a blocking budget, before anything is checked item by item.
    await this.budget?.assertAllows(ownerOf(principal), this.budget.maxCostOf(version), items.length);
    if (fileArg !== null && !version.args.some((a) => a.name === fileArg && a.type === 'file'))
      throw AppError.validation({ 'inputs.arg': `is not a file argument of this model` });
    const problems: Record<string, string> = {};
    const checked = items.map((item, k) => {
      try {
        return checkArgs(version.args, { ...common, ...item });
      } catch (err) {
        if (!(err instanceof AppError) || !err.details) throw err;
        for (const [key, problem] of Object.entries(err.details))
          problems[`items[${k}].${key.replace(/^args\.?/, '') || 'args'}`] = String(problem);
        return null;
      }
    });
    const assets = await this.media.ownedLive(
      principal,
      checked.flatMap((c) => c?.files.map((f) => f.mediaId) ?? []),
    );
    checked.forEach((c, k) => {
      for (const f of c?.files ?? [])
        if (!assets.has(f.mediaId)) problems[`items[${k}].${f.name}`] = 'is not a media asset of yours';
    });
    if (Object.keys(problems).length) throw AppError.validation(problems);
    const pathOf = (id: string) => {
      const a = assets.get(id)!;
      return (
        (this.config.executor === 'local' ? this.media.localPathOf(a) : null) ??
        path.join('inputs', storageKey(a))
      );
    };
    const owner = ownerOf(principal);
    return {
      owner,
      modelId: model.id,
      modelVersionId: version.id,
      secrets: version.secrets,
      executor: this.config.executor,
      container: version.container,
      machineType: version.machineType,
      machineCount: version.machineCount,
      timeoutSeconds: version.timeoutSeconds,
      maxRetries: model.maxRetries,
      items: checked.map((c, k) => {
        const { values, files } = c!;
        let argv: string[];
        try {
          argv = buildArgv(version.command, version.args, values, pathOf);
        } catch (err) {
          throw new AppError('VALIDATION_FAILED', `this model cannot run: ${(err as Error).message}`, {
            [`items[${k}]`]: (err as Error).message,
          });
        }
        return {
          deploymentId: randomUUID(),
          jobId: randomUUID(),
          name,
          args: values,
          sourceAssetId: files[0]?.mediaId ?? null,
          targetAssetId: randomUUID(),
          argv,
          inputs: [...new Set(files.map((f) => f.mediaId))].map((id) => ({ mediaId: id, path: pathOf(id) })),
        };
      }),
    };
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
    const job = assertOwned(
      isUuid(jobId) ? await this.queries.byId(jobId.toLowerCase()) : null,
      principal,
      'job',
    );
    if (!isTerminal(job.status))
      throw new AppError('CONFLICT', `the job is ${job.status}; only a job that has ended can be retried`);
    const [model] = await this.models.byIds([job.modelId]);
    if (!model) throw new AppError('CONFLICT', 'the model of this job was deleted; it cannot run again');
    // Made private or unshared since: as for a new deployment, a model one cannot see is 404.
    // The retry runs the job's own version (copied with its command), not the model's latest.
    await this.models.get(principal, model.id);
    await this.assertRunnable(model);
    await this.assertSecrets(ownerOf(principal), job.secrets);
    await this.budget?.assertAllows(ownerOf(principal), this.budget.maxCostOf(job), 1);
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
    const retry = await this.store.copyForRetry(job.id, cancelAfter, {
      caller: principal,
      action: { action: 'job.retried', targetType: 'job', details: { retry_of: job.id } },
    });
    this.lifecycle?.created(retry, retry.deployment.id);
    return retry;
  }

  async list(principal: Principal, args: PageArgs): Promise<Page<Deployment>> {
    return this.queries.deploymentPage(ownerOf(principal), args);
  }

  async get(principal: Principal, id: string): Promise<Deployment> {
    const deployment = isUuid(id) ? await this.queries.deploymentById(id.toLowerCase()) : null;
    return assertOwned(deployment, principal, 'deployment');
  }

  /** Deployments by id, as plain read-only rows (the loader of every job list's `deployment`). */
  async byIds(ids: readonly string[]): Promise<Deployment[]> {
    return this.queries.deploymentsByIds(ids);
  }

  /** With a machine types file, a model whose machine type has since been removed cannot run. */
  private assertMachineType(machineType: string): void {
    const types = this.config.machineTypes;
    if (!types || types.has(machineType)) return;
    throw new AppError(
      'VALIDATION_FAILED',
      `this model cannot run: its machine type "${machineType}" is not defined any more`,
      {
        modelId: `its machine type "${machineType}" is not one of ${[...types.keys()].join(', ')} (MACHINE_TYPES_FILE); its owner must choose another`,
      },
    );
  }

  /** A model that needs a secret its runner's owner does not keep cannot run: 400 naming them. */
  private async assertSecrets(owner: Owner, names: readonly string[]): Promise<void> {
    const missing = names.length && this.secrets ? await this.secrets.missing(owner, names) : [];
    if (!missing.length) return;
    throw new AppError(
      'VALIDATION_FAILED',
      `this model needs the secret${missing.length > 1 ? 's' : ''} ${missing.join(', ')}; set ${missing.length > 1 ? 'them' : 'it'} first (PUT /api/v1/secrets/{name})`,
      { secrets: `missing: ${missing.join(', ')}` },
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
