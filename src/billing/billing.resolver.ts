import { Arg, FieldResolver, Query, Resolver, Root } from 'type-graphql';
import type { Principal } from '../common/principal';
import { CurrentPrincipal } from '../graphql/graphql.helpers';
import { BillingService } from './billing.service';
import { ModelUsageType, UsageBucketType, UsageGranularity, UsageType } from './billing.types';

@Resolver(() => UsageType)
export class BillingResolver {
  constructor(private readonly service: BillingService) {}

  @Query(() => UsageType, {
    description:
      'Usage of the viewer (a team token: its team). `from` and `to`: ISO dates (whole UTC days, `to` included) or date-times with a zone (`to` excluded); neither: the current UTC month.',
  })
  async usage(
    @CurrentPrincipal() principal: Principal,
    @Arg('from', () => String, { nullable: true }) from?: string,
    @Arg('to', () => String, { nullable: true }) to?: string,
    @Arg('granularity', () => UsageGranularity, { defaultValue: UsageGranularity.DAY })
    granularity?: UsageGranularity,
  ) {
    return UsageType.from(await this.service.usage(principal, { from, to, granularity }));
  }

  @FieldResolver(() => [UsageBucketType], { description: 'Compute and storage per `granularity` bucket.' })
  async series(@Root() usage: UsageType) {
    return (await this.service.series(usage.report)).map((b) => usage.bucket(b));
  }

  @FieldResolver(() => [ModelUsageType], { description: 'Compute per model, most expensive first.' })
  async models(@Root() usage: UsageType) {
    return (await this.service.models(usage.report)).map((m) => usage.model(m));
  }
}
