import { Entity, Index, ManyToOne, PrimaryKey, Property, type Opt } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { TeamRole } from '../common/principal';
import { Team } from '../teams/team.entity';
import { User } from '../users/user.entity';
import type { OwnerType } from '../common/principal';

/** A long-lived credential. Only the SHA-256 of its value is stored. */
@Entity({ tableName: 'api_keys' })
@Index({ name: 'api_keys_owner_created_at_index', properties: ['ownerType', 'ownerId', 'createdAt', 'id'] })
export class ApiKey {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'text' })
  name!: string;

  @Property({ type: 'text', unique: true })
  keyHash!: string;

  @Property({ type: 'text' })
  ownerType!: OwnerType;

  @Property({ type: 'uuid' })
  ownerId!: string;

  @ManyToOne(() => User, { deleteRule: 'cascade' })
  createdBy!: User;

  @ManyToOne(() => Team, { nullable: true, deleteRule: 'cascade' })
  team: Team | null = null;

  /** A team key's role (`member` or `viewer`); null for a user's own key. */
  @Property({ type: 'text', nullable: true })
  role: TeamRole | null = null;

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime', nullable: true })
  lastUsedAt: Date | null = null;

  @Property({ type: 'datetime', nullable: true })
  revokedAt: Date | null = null;
}
