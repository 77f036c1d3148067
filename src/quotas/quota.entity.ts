import { Entity, PrimaryKey, Property, type Opt } from '@mikro-orm/core';
import type { OwnerType } from '../common/principal';

/**
 * An operator's quota and fair-share weight for one owner (docs/governance.md). A column left null
 * takes the configured default (QUOTA_MAX_RUNNING_JOBS, QUOTA_MAX_MACHINES, shares 1).
 */
@Entity({ tableName: 'owner_quotas' })
export class OwnerQuota {
  @PrimaryKey({ type: 'text' })
  ownerType!: OwnerType;

  @PrimaryKey({ type: 'uuid' })
  ownerId!: string;

  @Property({ type: 'integer', nullable: true })
  maxRunningJobs: number | null = null;

  /** Machines in use per machine type; a type named with null: unlimited for this owner. */
  @Property({ type: 'json', default: '{}' })
  machines: Opt<Record<string, number | null>> = {};

  @Property({ type: 'double', nullable: true })
  shares: number | null = null;

  @Property({ type: 'datetime' })
  updatedAt: Opt<Date> = new Date();
}
