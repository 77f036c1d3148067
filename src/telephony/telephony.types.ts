import { Field, ID, Int, ObjectType } from 'type-graphql';
import { Connection } from '../graphql/graphql.helpers';
import type { CallLinkResult, CallRecordView, NumberAssignmentView } from './telephony.service';

@ObjectType('NumberAssignment', { description: "The viewer's phone number and extension." })
export class NumberAssignmentType {
  @Field(() => String, { description: 'Always `user`: numbers are personal.' })
  role!: string;

  @Field(() => String, { description: 'Digits only.' })
  phoneNumber!: string;

  @Field(() => String, { description: "The identity provider's subject of the user." })
  idpId!: string;

  @Field(() => String, { description: 'Digits only.' })
  extension!: string;

  @Field(() => Date)
  createdAt!: Date;

  @Field(() => Date)
  updatedAt!: Date;

  static from(view: NumberAssignmentView): NumberAssignmentType {
    return Object.assign(new NumberAssignmentType(), view);
  }
}

@ObjectType('CallRecord', { description: 'One call leg, as the PBX reported it after the call.' })
export class CallRecordType {
  @Field(() => ID, { description: 'An integer.' })
  id!: string;

  @Field(() => Int, { description: 'Which PBX reported the call (TELEPHONY_PROVIDER_ID).' })
  provider!: number;

  @Field(() => String)
  callUuid!: string;

  @Field(() => String)
  callFrom!: string;

  @Field(() => String)
  callTo!: string;

  @Field(() => String, { nullable: true, description: 'The extension involved (digits), when known.' })
  extension!: string | null;

  @Field(() => String, {
    nullable: true,
    description: 'The phone number (DID) involved (digits), when known.',
  })
  didNumber!: string | null;

  @Field(() => String)
  domain!: string;

  @Field(() => String, { description: 'FreeSWITCH hangup cause, e.g. NORMAL_CLEARING.' })
  hangupCause!: string;

  @Field(() => String, { description: '`inbound`, `outbound` or `local`, as the PBX says.' })
  callDirection!: string;

  @Field(() => Int, { description: 'Seconds from answer to hangup.' })
  billDuration!: number;

  @Field(() => String, { nullable: true, description: "The recording's URL, when the call was recorded." })
  recording!: string | null;

  @Field(() => Date, { description: 'When the call began (ringing).' })
  createdAt!: Date;

  @Field(() => Date, { description: 'When it was answered; the creation time when it never was.' })
  startedAt!: Date;

  static from({ didnumber, ...view }: CallRecordView): CallRecordType {
    return Object.assign(new CallRecordType(), { ...view, didNumber: didnumber });
  }
}

export const CallRecordConnection = Connection(CallRecordType, 'CallRecord');

@ObjectType('CallLink', { description: 'A click-to-call handed to the PBX.' })
export class CallLinkType implements CallLinkResult {
  @Field(() => String, { description: "The call's UUID; its call record will carry it." })
  callUuid!: string;

  @Field(() => String, { description: '`initiated`: the PBX is ringing the caller.' })
  status!: 'initiated';
}
