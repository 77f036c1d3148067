import { Arg, Int, Mutation, Query, Resolver } from 'type-graphql';
import type { Principal } from '../common/principal';
import { encodeCursor } from '../common/pagination';
import { CurrentPrincipal, toConnection } from '../graphql/graphql.helpers';
import { TelephonyService } from './telephony.service';
import { CallLinkType, CallRecordConnection, CallRecordType, NumberAssignmentType } from './telephony.types';

@Resolver()
export class TelephonyResolver {
  constructor(private readonly service: TelephonyService) {}

  @Mutation(() => NumberAssignmentType, {
    description: "The viewer's phone number and extension, assigned from the pools on first call.",
  })
  async assignNumber(@CurrentPrincipal() principal: Principal) {
    return NumberAssignmentType.from(await this.service.assignNumber(principal));
  }

  @Query(() => CallRecordConnection, {
    description: "Calls from or to the viewer's number or extension, newest first.",
  })
  async callRecords(
    @CurrentPrincipal() principal: Principal,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ) {
    return toConnection(
      await this.service.callRecords(principal, { first, after }),
      CallRecordType.from,
      encodeCursor,
    );
  }

  @Mutation(() => CallLinkType, {
    description:
      "Click-to-call: rings the viewer's `source` (own number or extension), then calls `destination`.",
  })
  callLink(
    @CurrentPrincipal() principal: Principal,
    @Arg('source', () => String) source: string,
    @Arg('destination', () => String) destination: string,
  ) {
    return this.service.callLink(principal, { source, destination });
  }
}
