import { Arg, Ctx, FieldResolver, ID, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import { requirePrincipal, type Principal } from '../common/principal';
import { encodeCursor } from '../common/pagination';
import { JobService } from './job.service';
import { JobType } from './job.types';
import { MAX_WAIT_SECONDS } from './job.wait';
import { MediaService } from '../media/media.service';
import { MediaAssetType } from '../media/media.types';
import { ModelService } from '../models/model.service';
import { ModelType } from '../models/model.types';
import type { RequestContext } from '../graphql/graphql.context';
import { CurrentPrincipal, toConnection } from '../graphql/graphql.helpers';
import { byId, groupedBy } from '../graphql/graphql.loaders';
import { DeploymentService } from './deployment.service';
import { CreateDeploymentInput, DeploymentConnection, DeploymentType } from './deployment.types';

@Resolver(() => DeploymentType)
export class DeploymentResolver {
  private readonly jobView: ReturnType<typeof JobType.from>;
  private readonly mediaView: ReturnType<typeof MediaAssetType.from>;

  constructor(
    private readonly service: DeploymentService,
    private readonly jobService: JobService,
    private readonly models: ModelService,
    private readonly media: MediaService,
  ) {
    this.jobView = JobType.from(media.baseUrl);
    this.mediaView = MediaAssetType.from(media);
  }

  @Query(() => DeploymentConnection, { description: "The owner's deployments, newest first." })
  async deployments(
    @CurrentPrincipal() principal: Principal,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ) {
    return toConnection(
      await this.service.list(principal, { first, after }),
      DeploymentType.from,
      encodeCursor,
    );
  }

  @Query(() => DeploymentType)
  async deployment(@CurrentPrincipal() principal: Principal, @Arg('id', () => ID) id: string) {
    return DeploymentType.from(await this.service.get(principal, id));
  }

  @Mutation(() => DeploymentType, {
    description: 'Runs a model: validates the arguments, counts the run and queues one job.',
  })
  async createDeployment(
    @CurrentPrincipal() principal: Principal,
    @Ctx() ctx: RequestContext,
    @Arg('input') input: CreateDeploymentInput,
    @Arg('wait', () => Int, {
      nullable: true,
      description: `Seconds (at most ${MAX_WAIT_SECONDS}) to wait for the job to end before answering; its state is then in \`job\`.`,
    })
    wait?: number,
  ) {
    const { deployment, job } = await this.service.create(principal, input, {
      waitSeconds: wait,
      idempotency: ctx.idempotency,
    });
    // Its job is the one just written, unless the answer waited for its end: not read again.
    if (!wait) this.jobsLoader(ctx).prime(deployment.id, [job]);
    return DeploymentType.from(deployment);
  }

  @FieldResolver(() => JobType, { description: 'Its latest job (a retry makes a new one).' })
  async job(@Root() deployment: DeploymentType, @Ctx() ctx: RequestContext) {
    const [latest] = await this.jobsOf(deployment, ctx);
    return this.jobView(latest);
  }

  @FieldResolver(() => [JobType], { description: 'All its jobs, newest first.' })
  async jobs(@Root() deployment: DeploymentType, @Ctx() ctx: RequestContext) {
    return (await this.jobsOf(deployment, ctx)).map((j) => this.jobView(j));
  }

  private jobsOf(deployment: DeploymentType, ctx: RequestContext) {
    return this.jobsLoader(ctx).load(deployment.id);
  }

  private jobsLoader(ctx: RequestContext) {
    return groupedBy(
      ctx.loaders,
      'jobs.byDeployment',
      (ids) => this.jobService.byDeploymentIds(ids),
      (j) => j.deployment.id,
    );
  }

  @FieldResolver(() => ModelType, {
    nullable: true,
    description: 'Null once the model was deleted, or when the viewer may no longer see it (made private).',
  })
  async model(@Root() deployment: DeploymentType, @Ctx() ctx: RequestContext) {
    const m = await byId(ctx.loaders, 'models.byId', (ids) => this.models.byIds(ids)).load(
      deployment.modelId,
    );
    return ModelType.seenBy(requirePrincipal(ctx.principal), m);
  }

  @FieldResolver(() => MediaAssetType, { nullable: true, description: 'Null once the media was deleted.' })
  async sourceAsset(@Root() deployment: DeploymentType, @Ctx() ctx: RequestContext) {
    if (!deployment.sourceAssetId) return null;
    const a = await byId(ctx.loaders, 'media.byId', (ids) => this.media.byIds(ids)).load(
      deployment.sourceAssetId,
    );
    return a && this.mediaView(a);
  }
}
