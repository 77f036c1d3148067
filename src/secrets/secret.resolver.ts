import { Arg, Mutation, Query, Resolver } from 'type-graphql';
import type { Principal } from '../common/principal';
import { CurrentPrincipal } from '../graphql/graphql.helpers';
import type { SecretService } from './secret.service';
import { SecretType } from './secret.types';

@Resolver(() => SecretType)
export class SecretResolver {
  constructor(private readonly service: SecretService) {}

  @Query(() => [SecretType], { description: "The owner's secrets by name (names and times, never values)." })
  async secrets(@CurrentPrincipal() principal: Principal) {
    return (await this.service.list(principal)).map(SecretType.from);
  }

  @Mutation(() => SecretType, { description: 'Creates or replaces a secret of the owner.' })
  async setSecret(
    @CurrentPrincipal() principal: Principal,
    @Arg('name', () => String) name: string,
    @Arg('value', () => String, { description: 'At most 64 KiB; never answered.' }) value: string,
  ) {
    return SecretType.from(await this.service.put(principal, name, value));
  }

  @Mutation(() => String, { description: 'Deletes a secret of the owner; answers its name.' })
  async deleteSecret(@CurrentPrincipal() principal: Principal, @Arg('name', () => String) name: string) {
    return this.service.delete(principal, name);
  }
}
