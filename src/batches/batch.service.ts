import { assertOwned, ownerOf, type Principal } from '../common/principal';
import { AppError } from '../common/errors';
import { isUuid } from '../common/ids';
import type { Page, PageArgs } from '../common/pagination';
import type { Config } from '../config';
import type { DeploymentService, WebhookCheck } from '../jobs/deployment.service';
import type { JobLifecycle } from '../jobs/job.lifecycle';
import type { JobRow, JobService } from '../jobs/job.service';
import type { JobStore } from '../jobs/job.store';
import type { JobStatus } from '../jobs/job.states';
import type { MediaService } from '../media/media.service';
import { limitKey, type RateLimit } from '../rate-limits/rate-limiter';
import { authorize } from '../teams/team.roles';
import { validateName } from '../teams/team.service';
import { Batch, type BatchInputs } from './batch.entity';
import type { BatchCounts, BatchProgress, BatchStore } from './batch.store';

/** What a batch runs over: media by id, media by tag, or items of arguments (docs/batches.md). */
export interface BatchInputsInput {
  arg?: string | null;
  mediaIds?: readonly string[] | null;
  tags?: readonly string[] | null;
  excludeTags?: readonly string[] | null;
  items?: readonly unknown[] | null;
}

export interface CreateBatchInput {
  name: string;
  modelId: string;
  /** The version every item runs; the latest when left out. */
  versionId?: string | null;
  args?: Record<string, unknown> | null;
  inputs: BatchInputsInput;
  webhook?: string | null;
  webhookEventsFilter?: readonly string[] | null;
}

/** A batch's state: `completed` once every job has ended, read from its jobs. */
export type BatchStatus = 'running' | 'completed' | 'canceled';

/** A batch as read: its row and its jobs' progress. */
export interface BatchView {
  batch: Batch;
  status: BatchStatus;
  counts: BatchCounts;
  startedAt: Date | null;
  finishedAt: Date | null;
  runSeconds: number;
}

/**
 * Batches: one request running a model over many inputs. Each item becomes a deployment and its
 * job exactly as createDeployment makes them (checked by DeploymentService, written by the job
 * store in one statement whatever their number); the batch follows them as one thing: counts,
 * cancel, retry of the failed (docs/batches.md).
 */
export class BatchService {
  constructor(
    private readonly store: BatchStore,
    private readonly jobStore: JobStore,
    private readonly deployments: DeploymentService,
    private readonly jobs: JobService,
    private readonly media: MediaService,
    private readonly webhooks: WebhookCheck,
    private readonly config: Pick<Config, 'batchMaxItems' | 'maxQueuedJobs'>,
    /** The deployments' allowance (RATE_LIMIT_DEPLOYMENTS_PER_MINUTE): a batch takes one. */
    private readonly limit: RateLimit | null = null,
    private readonly lifecycle: JobLifecycle | null = null,
  ) {}

  /**
   * Checks every item (one bad item refuses the batch, naming it) and creates the batch, its
   * deployments, jobs and dispatch tasks in one statement: all or nothing.
   */
  async create(principal: Principal, input: CreateBatchInput): Promise<BatchView> {
    authorize(principal, 'write', 'create batches');
    const name = validateName(input.name);
    const common = input.args ?? {};
    if (typeof common !== 'object' || Array.isArray(common))
      throw AppError.validation({ args: 'must be an object of argument values' });
    const webhook = await this.webhooks.check(input);
    const { items, inputs, fileArg } = await this.itemsOf(principal, input.inputs);
    const owner = ownerOf(principal);
    const queued = await this.store.queuedOf(owner);
    if (queued + items.length > this.config.maxQueuedJobs)
      throw new AppError(
        'RATE_LIMITED',
        `too many queued jobs: you have ${queued} queued and this batch adds ${items.length}, ` +
          `over the limit of ${this.config.maxQueuedJobs} (MAX_QUEUED_JOBS); wait for some to end`,
      );
    const prepared = await this.deployments.prepareItems(
      principal,
      input.modelId,
      input.versionId ?? null,
      common,
      items,
      name,
      fileArg,
    );
    // One request against the deployments' allowance, whatever the number of items.
    await this.limit?.take(limitKey(principal, undefined), 'too many deployments; try again shortly');
    const batch = Object.assign(new Batch(), {
      ownerType: owner.type,
      ownerId: owner.id,
      name,
      modelId: prepared.modelId,
      args: common,
      inputs,
      total: items.length,
      webhook: webhook.webhook,
      webhookEventsFilter: webhook.events,
    });
    batch.createdAt = await this.jobStore.createItems({
      ...prepared,
      batchId: batch.id,
      parts: [this.store.insertPart(batch)],
      acting: {
        caller: principal,
        action: {
          action: 'batch.created',
          targetType: 'batch',
          targetId: batch.id,
          details: { batch_id: batch.id, model_id: batch.modelId, total: batch.total },
        },
      },
    });
    this.lifecycle?.createdMany(items.length, { batchId: batch.id, modelId: batch.modelId });
    return {
      batch,
      status: 'running',
      counts: { queued: items.length, starting: 0, running: 0, succeeded: 0, failed: 0, canceled: 0 },
      startedAt: null,
      finishedAt: null,
      runSeconds: 0,
    };
  }

  /** The items' own arguments, from whichever of the three forms `inputs` takes. */
  private async itemsOf(
    principal: Principal,
    given: BatchInputsInput | null | undefined,
  ): Promise<{ items: Record<string, unknown>[]; inputs: BatchInputs; fileArg: string | null }> {
    const max = this.config.batchMaxItems;
    const forms = given ? (['mediaIds', 'tags', 'items'] as const).filter((f) => given[f] != null) : [];
    if (!given || forms.length !== 1)
      throw AppError.validation({ inputs: 'must have exactly one of media_ids, tags or items' });
    const tooMany = (n: number) =>
      AppError.validation({ inputs: `selects ${n} items; a batch has at most ${max} (BATCH_MAX_ITEMS)` });
    if (given.items) {
      if (!Array.isArray(given.items)) throw AppError.validation({ 'inputs.items': 'must be a list' });
      if (!given.items.length) throw AppError.validation({ 'inputs.items': 'selects nothing' });
      if (given.items.length > max) throw tooMany(given.items.length);
      const bad = given.items.findIndex((i) => typeof i !== 'object' || i === null || Array.isArray(i));
      if (bad >= 0) throw AppError.validation({ [`items[${bad}]`]: 'must be an object of argument values' });
      return {
        items: given.items as Record<string, unknown>[],
        inputs: { items: given.items.length },
        fileArg: null,
      };
    }
    const arg = given.arg;
    if (typeof arg !== 'string' || !arg)
      throw AppError.validation({ 'inputs.arg': 'names the file argument the media go to' });
    let ids: readonly string[];
    let inputs: BatchInputs;
    if (given.mediaIds) {
      ids = given.mediaIds;
      if (ids.length > max) throw tooMany(ids.length);
      inputs = { arg, mediaIds: ids.length };
    } else {
      const tags = [...(given.tags ?? [])];
      const excludeTags = [...(given.excludeTags ?? [])];
      ids = await this.media.idsMatching(principal, { tags, excludeTags }, max + 1);
      if (ids.length > max) throw tooMany(ids.length);
      inputs = { arg, tags, excludeTags };
    }
    if (!ids.length) throw AppError.validation({ inputs: 'selects no media' });
    return { items: ids.map((id) => ({ [arg]: id })), inputs, fileArg: arg };
  }

  async list(principal: Principal, args: PageArgs): Promise<Page<BatchView>> {
    const page = await this.store.page(ownerOf(principal), args);
    const progress = await this.store.progressOfPage(page.items);
    return { ...page, items: page.items.map((b) => viewOf(b, progress.get(b.id)!)) };
  }

  async get(principal: Principal, id: string): Promise<BatchView> {
    const batch = await this.owned(principal, id);
    return viewOf(batch, await this.counts(batch.id));
  }

  /** A batch's progress (counts by state, times): one statement. */
  async counts(batchId: string): Promise<BatchProgress> {
    return (await this.store.progressOf([batchId])).get(batchId)!;
  }

  /** A page of the batch's jobs, of one state if asked; a foreign batch is 404. */
  async jobsOf(
    principal: Principal,
    id: string,
    status: JobStatus | null | undefined,
    args: PageArgs,
  ): Promise<Page<JobRow>> {
    const batch = await this.owned(principal, id);
    return this.jobs.list(principal, { batchId: batch.id, status }, args);
  }

  /**
   * Cancels every job of the batch not ended yet, in one statement (their workers stop them on
   * the executor, as for a job's cancel); a batch already canceled or completed is answered as it is.
   */
  async cancel(principal: Principal, id: string): Promise<BatchView> {
    authorize(principal, 'write', 'cancel batches');
    const batch = await this.owned(principal, id);
    const moved = await this.jobStore.cancelBatch(batch.id, [this.store.cancelPart(batch.id)], {
      caller: principal,
      action: { action: 'batch.canceled', targetType: 'batch', targetId: batch.id },
    });
    for (const { job, from } of moved) this.lifecycle?.transitioned(job, from);
    return this.get(principal, batch.id);
  }

  /** Runs the batch's failed jobs again: new jobs in the same batch, linked by `retry_of`. */
  async retry(principal: Principal, id: string): Promise<BatchView> {
    authorize(principal, 'write', 'retry batches');
    const batch = await this.owned(principal, id);
    // The retries run like new deployments: they spend the same allowance, once.
    await this.limit?.take(limitKey(principal, undefined), 'too many jobs started; try again shortly');
    const made = await this.jobStore.retryBatch(batch.id, [this.store.reopenPart(batch.id)], {
      caller: principal,
      action: { action: 'batch.retried', targetType: 'batch', targetId: batch.id },
    });
    if (made.length) this.lifecycle?.createdMany(made.length, { batchId: batch.id, modelId: batch.modelId });
    return this.get(principal, batch.id);
  }

  private async owned(principal: Principal, id: string): Promise<Batch> {
    return assertOwned(isUuid(id) ? await this.store.byId(id.toLowerCase()) : null, principal, 'batch');
  }
}

export function viewOf(batch: Batch, p: BatchProgress): BatchView {
  const canceled = batch.status === 'canceled';
  const completed = !canceled && p.live === 0;
  return {
    batch,
    status: canceled ? 'canceled' : completed ? 'completed' : 'running',
    counts: p.counts,
    startedAt: batch.startedAt ?? p.startedAt,
    finishedAt: canceled ? batch.finishedAt : completed ? p.finishedAt : null,
    runSeconds: p.runSeconds,
  };
}
