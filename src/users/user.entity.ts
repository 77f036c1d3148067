import { Entity, PrimaryKey, Property, type Opt } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/** A person known through the identity provider, keyed by the provider's `sub`. */
@Entity({ tableName: 'users' })
export class User {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'text', unique: true })
  subject!: string;

  @Property({ type: 'text' })
  username!: string;

  @Property({ type: 'text', nullable: true })
  email: string | null = null;

  @Property({ type: 'boolean' })
  emailVerified: Opt<boolean> = false;

  @Property({ type: 'text', nullable: true })
  name: string | null = null;

  @Property({ type: 'text', nullable: true })
  nickname: string | null = null;

  @Property({ type: 'text', nullable: true })
  picture: string | null = null;

  @Property({ type: 'text', nullable: true })
  phoneNumber: string | null = null;

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime', onUpdate: () => new Date() })
  updatedAt: Opt<Date> = new Date();
}
