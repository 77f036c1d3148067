import { Entity, PrimaryKey, Property, Unique, type Opt } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { OwnerType } from '../common/principal';

/**
 * An owner's named secret (a Hugging Face token, a licence key) for the models it runs. The value
 * is sealed with the service's sealing key, bound to its owner and name; it is never answered.
 */
@Entity({ tableName: 'secrets' })
@Unique({ properties: ['ownerType', 'ownerId', 'name'] })
export class Secret {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'text' })
  ownerType!: OwnerType;

  @Property({ type: 'uuid' })
  ownerId!: string;

  /** An environment variable name (secret.names.ts). */
  @Property({ type: 'text' })
  name!: string;

  /** `v1.<iv>.<tag>.<ciphertext>` (SecretBox), context `secret:<owner type>:<owner id>:<name>`. */
  @Property({ type: 'text', lazy: true })
  sealedValue!: string;

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime' })
  updatedAt: Opt<Date> = new Date();
}
