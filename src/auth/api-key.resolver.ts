import { Arg, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import { encodeCursor } from '../common/pagination';
import type { RequestContext } from '../graphql/graphql.context';
import { CurrentPrincipal, toConnection } from '../graphql/graphql.helpers';
import { ApiKeyService } from './api-key.service';
import { ApiKeyConnection, ApiKeyType, CreateApiKeyInput, CreatedApiKey } from './api-key.types';
import type { Principal } from '../common/principal';

@Resolver(() => ApiKeyType)
export class ApiKeyResolver {
  constructor(private readonly service: ApiKeyService) {}

  @Query(() => ApiKeyConnection, {
    description: "The principal's API keys, or a team's when its owner names it.",
  })
  async apiKeys(
    @CurrentPrincipal() principal: Principal,
    @Arg('teamId', () => ID, { nullable: true }) teamId?: string,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ) {
    return toConnection(
      await this.service.list(principal, { teamId }, { first, after }),
      ApiKeyType.from,
      encodeCursor,
    );
  }

  @Mutation(() => CreatedApiKey)
  async createApiKey(
    @CurrentPrincipal() principal: Principal,
    @Ctx() ctx: RequestContext,
    @Arg('input') input: CreateApiKeyInput,
  ): Promise<CreatedApiKey> {
    const { key, value } = await this.service.create(principal, input, ctx.idempotency);
    return { apiKey: ApiKeyType.from(key), value };
  }

  @Mutation(() => ApiKeyType, { description: 'Revokes a key; it stops working on the very next request.' })
  async revokeApiKey(@CurrentPrincipal() principal: Principal, @Arg('id', () => ID) id: string) {
    return ApiKeyType.from(await this.service.revoke(principal, id));
  }
}
