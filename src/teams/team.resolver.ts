import { Arg, Int, Mutation, Query, Resolver } from 'type-graphql';
import type { Principal } from '../auth/principal';
import { encodeCursor } from '../common/pagination';
import { CurrentPrincipal, toConnection } from '../graphql/graphql.helpers';
import { TeamService } from './team.service';
import { CreateTeamInput, TeamConnection, TeamType } from './team.types';

@Resolver(() => TeamType)
export class TeamResolver {
  constructor(private readonly service: TeamService) {}

  @Query(() => TeamConnection, { description: "The viewer's teams (a team token sees only its team)." })
  async teams(
    @CurrentPrincipal() principal: Principal,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ) {
    return toConnection(await this.service.list(principal, { first, after }), TeamType.from, (v) =>
      encodeCursor(v.team),
    );
  }

  @Mutation(() => TeamType, { description: 'Creates a team; the creator becomes its owner.' })
  async createTeam(@CurrentPrincipal() principal: Principal, @Arg('input') input: CreateTeamInput) {
    return TeamType.from(await this.service.create(principal, input));
  }
}
