import { BigIntType, Entity, Index, OneToOne, PrimaryKey, Property, type Opt } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { User } from '../users/user.entity';

/**
 * A user's phone number and extension, drawn from the configured pools. Personal (a user, never
 * a team) and never released, so a number always leads to the same user. Both values are digit
 * strings stored as bigint: unique constraints guard against double assignment and the pools'
 * free values are found with index range scans.
 */
@Entity({ tableName: 'number_assignments' })
export class NumberAssignment {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @OneToOne(() => User, { owner: true, unique: true, deleteRule: 'cascade' })
  user!: User;

  @Property({ type: new BigIntType('string'), unique: true })
  phoneNumber!: string;

  @Property({ type: new BigIntType('string'), unique: true })
  extension!: string;

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime', onUpdate: () => new Date() })
  updatedAt: Opt<Date> = new Date();
}

/** One call leg as FreeSWITCH reported it in its CDR (see docs/telephony.md for the mapping). */
@Entity({ tableName: 'call_records' })
@Index({ properties: ['createdAt', 'id'] })
export class CallRecord {
  @PrimaryKey({ type: new BigIntType('string'), autoincrement: true })
  id!: string;

  /** TELEPHONY_PROVIDER_ID of the service that ingested the record: which PBX it came from. */
  @Property({ type: 'integer' })
  provider!: number;

  @Property({ type: 'uuid', unique: true })
  callUuid!: string;

  @Property({ type: 'text' })
  @Index()
  callFrom!: string;

  @Property({ type: 'text' })
  @Index()
  callTo!: string;

  @Property({ type: new BigIntType('string'), nullable: true })
  @Index()
  extension: string | null = null;

  @Property({ type: new BigIntType('string'), nullable: true })
  @Index()
  didnumber: string | null = null;

  @Property({ type: 'text' })
  domain!: string;

  @Property({ type: 'text' })
  hangupCause!: string;

  @Property({ type: 'text' })
  callDirection!: string;

  /** Seconds from answer to hangup (FreeSWITCH `billsec`). */
  @Property({ type: 'integer' })
  billDuration!: number;

  /** Where FreeSWITCH wrote the recording (a URL, or a path below TELEPHONY_RECORDINGS_DIR). */
  @Property({ type: 'text', nullable: true })
  recordingPath: string | null = null;

  /** When the channel was created (the call began ringing). */
  @Property({ type: 'datetime' })
  createdAt!: Date;

  /** When the call was answered; the creation time for calls never answered. */
  @Property({ type: 'datetime' })
  startedAt!: Date;
}
