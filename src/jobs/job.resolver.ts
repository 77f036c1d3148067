import type { GraphQLResolveInfo } from 'graphql';
import {
  Arg,
  Ctx,
  FieldResolver,
  ID,
  Info,
  Int,
  Mutation,
  Query,
  Resolver,
  Root,
  Subscription,
} from 'type-graphql';
import { requirePrincipal, type Principal } from '../common/principal';
import { encodeCursor } from '../common/pagination';
import { DeploymentService } from './deployment.service';
import { DeploymentType } from './deployment.types';
import { MediaService } from '../media/media.service';
import { MediaAssetType } from '../media/media.types';
import { ModelService } from '../models/model.service';
import { ModelType } from '../models/model.types';
import type { RequestContext } from '../graphql/graphql.context';
import { CurrentPrincipal, selectedFields, selectedFieldsAt, toConnection } from '../graphql/graphql.helpers';
import { byId, groupedBy } from '../graphql/graphql.loaders';
import type { JobUpdate } from './job.live';
import type { LogLine } from './job.log';
import { JobService } from './job.service';
import type { JobStatus } from './job.states';
import {
  JobConnection,
  JobCostType,
  JobFilterInput,
  JobOrderEnum,
  JobStatusEnum,
  JobLogLineType,
  JobTransitionType,
  JobType,
  jobNeedsOf,
  jobPropsOf,
} from './job.types';
import type { Deployment } from './deployment.entity';
import type { Model } from '../models/model.entity';

type Subscribed = { args: { id: string }; context: RequestContext; info: GraphQLResolveInfo };

/** The model and deployment read with a job in the list's statement (only the columns asked for). */
const LISTED = Symbol('read with the job');
type Listed<T> = T & { [LISTED]?: { model?: Model | null; deployment?: Deployment | null } };

@Resolver(() => JobType)
export class JobResolver {
  private readonly view: ReturnType<typeof JobType.from>;
  private readonly updateView: ReturnType<typeof JobType.fromUpdate>;
  private readonly mediaView: ReturnType<typeof MediaAssetType.from>;

  constructor(
    private readonly service: JobService,
    private readonly deployments: DeploymentService,
    private readonly models: ModelService,
    private readonly media: MediaService,
  ) {
    this.view = JobType.from(media.baseUrl);
    this.updateView = JobType.fromUpdate(media.baseUrl);
    this.mediaView = MediaAssetType.from(media);
  }

  @Query(() => JobConnection, {
    description: "The owner's jobs, newest first unless `orderBy` says otherwise.",
  })
  async jobs(
    @CurrentPrincipal() principal: Principal,
    @Ctx() ctx: RequestContext,
    @Info() info: GraphQLResolveInfo,
    @Arg('filter', () => JobFilterInput, { nullable: true }) filter?: JobFilterInput,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
    @Arg('orderBy', () => JobOrderEnum, { nullable: true }) orderBy?: JobOrderEnum | null,
  ) {
    // The job's columns the query needs, and its model and deployment if asked, come in the
    // list's own statement; the nested rows ride on each view (partial rows never reach the
    // request's loaders, whose other users may want every field).
    const modelFields = selectedFieldsAt(info, 'nodes.model', 'edges.node.model');
    const deploymentFields = selectedFieldsAt(info, 'nodes.deployment', 'edges.node.deployment');
    const page = await this.service.list(
      principal,
      { status: filter?.status as JobStatus | undefined, modelId: filter?.modelId },
      { first, after },
      {
        job: jobPropsOf(selectedFieldsAt(info, 'nodes', 'edges.node') ?? []),
        model: modelFields && ModelType.propsOf(modelFields),
        deployment: deploymentFields && DeploymentType.propsOf(deploymentFields),
      },
      orderBy ?? JobOrderEnum.CREATED_AT,
    );
    return toConnection(
      page,
      (j) =>
        Object.assign(this.view(j), {
          [LISTED]: { model: j.model, deployment: deploymentFields && j.deployment },
        }),
      (j) => j.cursor ?? encodeCursor(j),
    );
  }

  @Query(() => JobType)
  async job(@CurrentPrincipal() principal: Principal, @Arg('id', () => ID) id: string) {
    return this.view(await this.service.get(principal, id));
  }

  @Mutation(() => JobType, { description: 'Stops a job; a job that has ended is answered as it is.' })
  async cancelJob(@CurrentPrincipal() principal: Principal, @Arg('id', () => ID) id: string) {
    return this.view(await this.service.cancel(principal, id));
  }

  @Mutation(() => JobType, {
    description:
      'Runs a job that has ended once more: a new job of the same deployment with the same command, linked by retryOfId.',
  })
  async retryJob(
    @CurrentPrincipal() principal: Principal,
    @Arg('id', () => ID) id: string,
    @Arg('cancelAfter', () => String, {
      nullable: true,
      description: 'Cancel the new job if it has not ended after this duration (30s, 5m, 1h30m).',
    })
    cancelAfter?: string,
  ) {
    return this.view(await this.deployments.retry(principal, id, { cancelAfter }));
  }

  @Subscription(() => JobType, {
    description:
      "One job: its state now, then each transition; it completes when the job has ended. Another owner's job is NOT_FOUND.",
    // Each event is executed with loaders of its own (server/websocket.shared.ts).
    subscribe: ({ args, context, info }: Subscribed) =>
      context.live.one(requirePrincipal(context.principal), args.id, jobNeedsOf(selectedFields(info))),
  })
  jobUpdated(@Root() update: JobUpdate, @Arg('id', () => ID) _id: string): JobType {
    return this.updateView(update);
  }

  @Subscription(() => JobType, {
    name: 'jobs',
    description: "Every transition of the owner's jobs.",
    subscribe: ({ context, info }: Subscribed) =>
      context.live.all(requirePrincipal(context.principal), jobNeedsOf(selectedFields(info))),
  })
  jobsUpdated(@Root() update: JobUpdate): JobType {
    return this.updateView(update);
  }

  @Subscription(() => JobLogLineType, {
    description: 'The lines a job prints from now on, until it ends (its earlier output is in logTail).',
    subscribe: ({ args, context }: Subscribed) =>
      context.live.logs(requirePrincipal(context.principal), args.id),
  })
  jobLogs(@Root() line: LogLine, @Arg('id', () => ID) _id: string): JobLogLineType {
    return JobLogLineType.from(line);
  }

  @FieldResolver(() => ModelType, {
    nullable: true,
    description: 'Null once the model was deleted, or when the viewer may no longer see it (made private).',
  })
  model(@Root() job: Listed<JobType>, @Ctx() ctx: RequestContext) {
    const principal = requirePrincipal(ctx.principal);
    const listed = job[LISTED]?.model;
    if (listed !== undefined) return ModelType.seenBy(principal, listed);
    return this.modelLoader(ctx)
      .load(job.modelId)
      .then((m) => ModelType.seenBy(principal, m));
  }

  @FieldResolver(() => DeploymentType)
  deployment(@Root() job: Listed<JobType>, @Ctx() ctx: RequestContext) {
    const listed = job[LISTED]?.deployment;
    if (listed) return DeploymentType.from(listed);
    return this.deploymentLoader(ctx)
      .load(job.deploymentId)
      .then((d) => DeploymentType.from(d!));
  }

  private modelLoader(ctx: RequestContext) {
    return byId(ctx.loaders, 'models.byId', (ids) => this.models.byIds(ids));
  }

  private deploymentLoader(ctx: RequestContext) {
    return byId(ctx.loaders, 'deployments.byId', (ids) => this.deployments.byIds(ids));
  }

  @FieldResolver(() => JobCostType, {
    description: 'What it cost (so far, with `final: false`, while it may still run), from the price list.',
  })
  cost(@Root() job: JobType) {
    return this.service.costOf(job);
  }

  @FieldResolver(() => [MediaAssetType], { description: 'The files it wrote, as media assets.' })
  async outputs(@Root() job: JobType, @Ctx() ctx: RequestContext) {
    const assets = await groupedBy(
      ctx.loaders,
      'media.byJob',
      (ids) => this.media.byJobIds(ids),
      (a) => a.jobId!,
    ).load(job.id);
    return assets.map(this.mediaView);
  }

  @FieldResolver(() => Int, { nullable: true })
  async queuePosition(@Root() job: JobType, @Ctx() ctx: RequestContext) {
    return job.status === JobStatusEnum.QUEUED
      ? ((await this.queueLoader(ctx).load(job.id))?.position ?? null)
      : null;
  }

  @FieldResolver(() => String, { nullable: true })
  async pendingReason(@Root() job: JobType, @Ctx() ctx: RequestContext) {
    if (job.status !== JobStatusEnum.QUEUED) return job.pendingReason;
    return (await this.queueLoader(ctx).load(job.id))?.reason ?? job.pendingReason;
  }

  /** A queued job's position is exact alone; in a list each one counts at most 1,000 jobs ahead. */
  private queueLoader(ctx: RequestContext) {
    return ctx.loaders.get<string, { position: number | null; reason: string | null } | null>(
      'jobs.queueInfo',
      async (ids) => {
        const info = await this.service.queueInfo(ids, ids.length === 1 ? 1_000_000 : 1000);
        return ids.map((id) => info.get(id) ?? null);
      },
    );
  }

  @FieldResolver(() => [JobTransitionType])
  async transitions(@Root() job: JobType, @Ctx() ctx: RequestContext) {
    const rows = await groupedBy(
      ctx.loaders,
      'jobs.transitions',
      (ids) => this.service.transitionsOf(ids),
      (t) => t.job.id,
    ).load(job.id);
    return rows.map(JobTransitionType.from);
  }
}
