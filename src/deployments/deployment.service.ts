import type { MikroORM } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { assertOwned, ownedBy, ownerOf, type Principal } from '../auth/principal';
import type { Config } from '../config';
import { AppError } from '../common/errors';
import { isUuid } from '../common/ids';
import { findPage, type Page, type PageArgs } from '../common/pagination';
import { CHANNELS } from '../events/event-bus';
import { buildArgv } from '../jobs/job.command';
import { Job, JobTransition, type JobInput } from '../jobs/job.entity';
import type { JobEvent } from '../jobs/job.service';
import { storageKey } from '../media/media.entity';
import type { MediaService } from '../media/media.service';
import type { Model } from '../models/model.entity';
import { incrementRunCount, type ModelService } from '../models/model.service';
import { validateName } from '../teams/team.service';
import { User } from '../users/user.entity';
import { checkArgs } from './deployment.args';
import { Deployment } from './deployment.entity';

export interface CreateDeploymentInput {
  name: string;
  modelId: string;
  args?: unknown;
}

/** The graphile-worker task that hands a queued job to an executor. */
export const DISPATCH_TASK = 'dispatch_job';

export class DeploymentService {
  constructor(
    private readonly orm: MikroORM,
    private readonly config: Pick<Config, 'executor' | 'localExecutorTrust' | 'adminSubjects' | 'dataDir'>,
    private readonly models: ModelService,
    private readonly media: MediaService,
  ) {}

  /** Where a job's processes run and write; one directory per job. */
  workDirOf(jobId: string): string {
    return path.join(this.config.dataDir, 'jobs', jobId);
  }

  /**
   * Validates the arguments against the model, builds the command, and in one transaction
   * records the deployment and its queued job, counts the run and enqueues the dispatch.
   * Any failure creates nothing.
   */
  async create(
    principal: Principal,
    input: CreateDeploymentInput,
  ): Promise<{ deployment: Deployment; job: Job }> {
    const name = validateName(input.name);
    const model = await this.models.get(principal, input.modelId);
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
      // Local storage is read in place; other storage is staged into the job's directory.
      path: this.media.localPathOf(a) ?? path.join(this.workDirOf(jobId), 'inputs', storageKey(a)),
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
    return this.orm.em.fork().transactional(async (tx) => {
      const deployment = tx.create(Deployment, {
        ownerType: owner.type,
        ownerId: owner.id,
        name,
        modelId: model.id,
        args: values,
        sourceAssetId: files[0]?.mediaId ?? null,
      });
      const job = tx.create(Job, {
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
      });
      tx.create(JobTransition, { job, fromStatus: null, toStatus: 'queued', at: job.createdAt });
      await tx.flush();
      await incrementRunCount(tx, model.id);
      const event: JobEvent = {
        jobId,
        ownerType: owner.type,
        ownerId: owner.id,
        status: 'queued',
        from: null,
        at: job.createdAt.toISOString(),
      };
      // Enqueued in the same transaction: a job is dispatched if and only if it was created.
      await tx.execute(
        `select graphile_worker.add_job(?, json_build_object('jobId', ?::text), max_attempts => 5), pg_notify(?, ?)`,
        [DISPATCH_TASK, jobId, CHANNELS.jobs, JSON.stringify(event)],
      );
      return { deployment, job };
    });
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

  async byIds(ids: readonly string[]): Promise<Deployment[]> {
    return this.orm.em.fork().find(Deployment, { id: { $in: [...ids] } });
  }

  /**
   * The local executor runs commands on this host as the service's own user, so by default it
   * runs only built-in models and models of operators (ADMIN_SUBJECTS).
   */
  private async assertRunnable(model: Model): Promise<void> {
    if (this.config.executor !== 'local' || this.config.localExecutorTrust === 'any' || model.builtin) return;
    if (model.ownerType === 'user' && model.ownerId) {
      const owner = await this.orm.em.fork().findOne(User, { id: model.ownerId });
      if (owner && this.config.adminSubjects.includes(owner.subject)) return;
    }
    throw new AppError(
      'FORBIDDEN',
      'the local executor runs only built-in models and models of operators; ' +
        'an operator can run this one, or a single-user install can set LOCAL_EXECUTOR_TRUST=any',
    );
  }
}
