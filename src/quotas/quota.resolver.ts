import { Arg, ID, Mutation, Query, Resolver } from 'type-graphql';
import type { Principal } from '../common/principal';
import { CurrentPrincipal } from '../graphql/graphql.helpers';
import type { QuotaService } from './quota.service';
import { QuotaType, SetQuotaInput } from './quota.types';

@Resolver(() => QuotaType)
export class QuotaResolver {
  constructor(private readonly service: QuotaService) {}

  @Query(() => QuotaType, {
    description: "The quotas of the caller's owner (user or team), with what is in use.",
  })
  async quota(@CurrentPrincipal() principal: Principal) {
    return QuotaType.from(await this.service.get(principal));
  }

  @Mutation(() => QuotaType, {
    description:
      "Sets an owner's quotas and shares, replacing the earlier ones (operators only, ADMIN_SUBJECTS).",
  })
  async setQuota(
    @CurrentPrincipal() principal: Principal,
    @Arg('ownerType', () => String, { description: 'user or team' }) ownerType: string,
    @Arg('ownerId', () => ID) ownerId: string,
    @Arg('input', () => SetQuotaInput) input: SetQuotaInput,
  ) {
    return QuotaType.from(await this.service.set(principal, ownerType, ownerId, input));
  }
}
