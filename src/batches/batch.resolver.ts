import { Arg, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import type { Principal } from '../common/principal';
import { encodeCursor } from '../common/pagination';
import { CurrentPrincipal, toConnection } from '../graphql/graphql.helpers';
import { JobConnection, JobStatusEnum, JobType } from '../jobs/job.types';
import type { JobStatus } from '../jobs/job.states';
import { MediaService } from '../media/media.service';
import { BatchService } from './batch.service';
import { BatchConnection, BatchType, CreateBatchInput } from './batch.types';

@Resolver(() => BatchType)
export class BatchResolver {
  private readonly jobView: ReturnType<typeof JobType.from>;

  constructor(
    private readonly service: BatchService,
    media: MediaService,
  ) {
    this.jobView = JobType.from(media.baseUrl);
  }

  @Mutation(() => BatchType, {
    description:
      'Runs a model over many inputs: every item checked, then all its deployments and jobs made at once (docs/batches.md).',
  })
  async createBatch(@CurrentPrincipal() principal: Principal, @Arg('input') input: CreateBatchInput) {
    return BatchType.from(await this.service.create(principal, input));
  }

  @Query(() => BatchType)
  async batch(@CurrentPrincipal() principal: Principal, @Arg('id', () => ID) id: string) {
    return BatchType.from(await this.service.get(principal, id));
  }

  @Query(() => BatchConnection, { description: "The owner's batches, newest first." })
  async batches(
    @CurrentPrincipal() principal: Principal,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ) {
    return toConnection(await this.service.list(principal, { first, after }), BatchType.from, (v) =>
      encodeCursor(v.batch),
    );
  }

  @Query(() => JobConnection, { description: "A batch's jobs (retries included), newest first." })
  async batchJobs(
    @CurrentPrincipal() principal: Principal,
    @Arg('id', () => ID) id: string,
    @Arg('status', () => JobStatusEnum, { nullable: true }) status?: JobStatusEnum,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ) {
    const page = await this.service.jobsOf(principal, id, status as JobStatus | undefined, { first, after });
    return toConnection(page, (j) => this.jobView(j), encodeCursor);
  }

  @Mutation(() => BatchType, { description: 'Cancels every job of the batch that has not ended.' })
  async cancelBatch(@CurrentPrincipal() principal: Principal, @Arg('id', () => ID) id: string) {
    return BatchType.from(await this.service.cancel(principal, id));
  }

  @Mutation(() => BatchType, { description: 'Runs its failed jobs again: new jobs in the same batch.' })
  async retryBatch(@CurrentPrincipal() principal: Principal, @Arg('id', () => ID) id: string) {
    return BatchType.from(await this.service.retry(principal, id));
  }
}
