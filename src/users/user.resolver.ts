import { Query, Resolver } from 'type-graphql';
import type { Principal } from '../common/principal';
import { CurrentPrincipal } from '../graphql/graphql.helpers';
import { ViewerType } from './user.types';

@Resolver(() => ViewerType)
export class UserResolver {
  @Query(() => ViewerType, { description: 'Who the credential belongs to.' })
  me(@CurrentPrincipal() principal: Principal): ViewerType {
    return ViewerType.from(principal);
  }
}
