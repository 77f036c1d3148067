import { Arg, Mutation, Query, Resolver } from 'type-graphql';
import type { Principal } from '../common/principal';
import { CurrentPrincipal } from '../graphql/graphql.helpers';
import { BudgetService } from './budget.service';
import { BudgetInput, BudgetType } from './budget.types';

@Resolver(() => BudgetType)
export class BudgetResolver {
  constructor(private readonly service: BudgetService) {}

  @Query(() => BudgetType, {
    description: "The viewer's monthly budget (a team token: its team's; members read it).",
  })
  async budget(@CurrentPrincipal() principal: Principal) {
    return BudgetType.from(await this.service.get(principal));
  }

  @Mutation(() => BudgetType, {
    description: "Sets the viewer's monthly budget (for a team: its owners only).",
  })
  async setBudget(
    @CurrentPrincipal() principal: Principal,
    @Arg('input', () => BudgetInput) input: BudgetInput,
  ) {
    return BudgetType.from(await this.service.set(principal, input));
  }
}
