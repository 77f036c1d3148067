import { Entity, Index, PrimaryKey, Property, Unique, type Opt } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { OwnerType } from '../common/principal';

/**
 * One `Idempotency-Key` of one owner: held (`running`, under a lease the holder renews) while
 * the first request runs, then `done` with that request's answer, for 24 hours. The key itself
 * is stored only as a hash, and the answer is encrypted under a key derived from it: the stored
 * answer of `POST /api/v1/tokens` holds a token, readable only by whoever knows the key.
 * What the request made is recorded with it in the same transaction (`made`).
 */
@Entity({ tableName: 'idempotency_keys' })
@Unique({ properties: ['ownerType', 'ownerId', 'keyHash'] })
@Index({ properties: ['createdAt'] })
export class IdempotencyKey {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'text' })
  ownerType!: OwnerType;

  @Property({ type: 'uuid' })
  ownerId!: string;

  @Property({ type: 'text' })
  keyHash!: string;

  /** What the request was (endpoint and body); null while an upload is still being read. */
  @Property({ type: 'text', nullable: true })
  fingerprint: string | null = null;

  @Property({ type: 'text' })
  status: Opt<'running' | 'done'> = 'running';

  @Property({ type: 'datetime' })
  lockedUntil!: Date;

  /**
   * What the request made under the key (`deployment:<id>`), recorded by the statement or
   * transaction that made it: a repeat after a crash before the answer was stored finds it there.
   */
  @Property({ type: 'text[]', defaultRaw: `'{}'` })
  made: Opt<string[]> = [];

  /** IV, tag and AES-256-GCM ciphertext of the answer. */
  @Property({ type: 'blob', nullable: true })
  response: Buffer | null = null;

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();
}
