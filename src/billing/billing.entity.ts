import { BigIntType, Check, Entity, Index, PrimaryKey, Property } from '@mikro-orm/core';
import type { OwnerType } from '../common/principal';

/**
 * The storage ledger: one row per span of time a media asset was live with a given size, so
 * storage can be billed over any past period although deleted assets lose their row. Written
 * only by the `media_storage_ledger` trigger on `media_assets` (migration `billing`), in the
 * statement that turns an asset live, resizes it, hides it for deletion or deletes it: every
 * code path (uploads, job outputs, the sweeper, plain SQL) keeps it, and none has to remember.
 */
@Entity({ tableName: 'media_storage' })
@Index({
  name: 'media_storage_open_index',
  expression:
    'create index "media_storage_open_index" on "media_storage" ("owner_type", "owner_id", "live_from") include ("bytes") where "live_until" is null',
})
@Index({
  name: 'media_storage_closed_index',
  expression:
    'create index "media_storage_closed_index" on "media_storage" ("owner_type", "owner_id", "live_until") include ("live_from", "bytes") where "live_until" is not null',
})
@Index({
  name: 'media_storage_asset_open_unique',
  expression:
    'create unique index "media_storage_asset_open_unique" on "media_storage" ("asset_id") where "live_until" is null',
})
export class MediaStorageInterval {
  @PrimaryKey({ type: 'bigint', autoincrement: true })
  id!: string;

  /** No foreign key: the asset's row goes, its history stays. */
  @Property({ type: 'uuid' })
  assetId!: string;

  @Property({ type: 'text' })
  ownerType!: OwnerType;

  @Property({ type: 'uuid' })
  ownerId!: string;

  @Property({ type: new BigIntType('number') })
  bytes!: number;

  @Property({ type: 'datetime' })
  liveFrom!: Date;

  /** Null while the asset is live. */
  @Property({ type: 'datetime', nullable: true })
  liveUntil: Date | null = null;
}

/**
 * The spend rollup: machine-seconds of an owner's ended jobs per UTC day, machine type and model,
 * with the jobs that started that day. Written only by the statement that ends jobs
 * (billing.spend.ts, through JobStatementParts.ended); read by budgets and by usage reports.
 */
@Entity({ tableName: 'spend_daily' })
export class SpendDay {
  @PrimaryKey({ type: 'text' })
  ownerType!: OwnerType;

  @PrimaryKey({ type: 'uuid' })
  ownerId!: string;

  @PrimaryKey({ type: 'date' })
  day!: string;

  @PrimaryKey({ type: 'text' })
  machineType!: string;

  @PrimaryKey({ type: 'uuid' })
  modelId!: string;

  /** Exact: PostgreSQL's interval seconds (6 decimals) times machines, summed. */
  @Property({ type: 'decimal', default: 0 })
  machineSeconds!: string;

  @Property({ type: 'integer', default: 0 })
  jobs!: number;
}

/**
 * The storage rollup, for spans of the ledger that have ended: their byte-seconds per owner and
 * UTC day. Written only by the `media_storage_rollup_*` triggers on `media_storage` (migration
 * `storage_rollup`), so a period's storage reads a row per day, not a row per file.
 */
@Entity({ tableName: 'storage_daily' })
export class StorageDay {
  @PrimaryKey({ type: 'text' })
  ownerType!: OwnerType;

  @PrimaryKey({ type: 'uuid' })
  ownerId!: string;

  @PrimaryKey({ type: 'date' })
  day!: string;

  /** Exact: bytes times PostgreSQL's interval seconds (6 decimals), summed. */
  @Property({ type: 'decimal', default: 0 })
  byteSeconds!: string;
}

/**
 * The ledger's open spans (files live now) per owner and UTC day they opened: their bytes, and
 * their bytes times the seconds from that day's start to each span's start. With these a
 * period's storage so far is a sum over days (docs/governance.md, "Storage"). Kept by the same
 * triggers; a span that ends moves from here to `storage_daily`.
 */
@Entity({ tableName: 'storage_open' })
export class StorageOpenDay {
  @PrimaryKey({ type: 'text' })
  ownerType!: OwnerType;

  @PrimaryKey({ type: 'uuid' })
  ownerId!: string;

  @PrimaryKey({ type: 'date' })
  day!: string;

  @Property({ type: 'decimal', default: 0 })
  bytes!: string;

  /** Sum of bytes x seconds from the day's start to each span's `live_from`. */
  @Property({ type: 'decimal', default: 0 })
  byteSecondsIn!: string;
}

/** An owner's monthly budget (docs/governance.md). */
@Entity({ tableName: 'budgets' })
@Check({ name: 'budgets_monthly_limit_check', expression: '"monthly_limit" > 0' })
export class Budget {
  @PrimaryKey({ type: 'text' })
  ownerType!: OwnerType;

  @PrimaryKey({ type: 'uuid' })
  ownerId!: string;

  @Property({ type: 'decimal' })
  monthlyLimit!: string;

  @Property({ type: 'text' })
  action!: 'block' | 'notify';

  @Property({ type: 'text', nullable: true })
  webhook: string | null = null;

  @Property({ type: 'datetime' })
  updatedAt!: Date;
}

/** A threshold announced for a period: its key makes each announcement happen once. */
@Entity({ tableName: 'budget_notices' })
export class BudgetNotice {
  @PrimaryKey({ type: 'text' })
  ownerType!: OwnerType;

  @PrimaryKey({ type: 'uuid' })
  ownerId!: string;

  @PrimaryKey({ type: 'date' })
  periodStart!: string;

  @PrimaryKey({ type: 'integer' })
  threshold!: number;

  @Property({ type: 'decimal' })
  spent!: string;

  @Property({ type: 'decimal' })
  monthlyLimit!: string;

  @Property({ type: 'datetime' })
  at!: Date;
}
