import { Migration } from '@mikro-orm/migrations';

export class Migration20261122220821_billing extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "media_storage" ("id" bigserial primary key, "asset_id" uuid not null, "owner_type" text not null, "owner_id" uuid not null, "bytes" bigint not null, "live_from" timestamptz not null, "live_until" timestamptz null);`);
    this.addSql(`create unique index "media_storage_asset_open_unique" on "media_storage" ("asset_id") where "live_until" is null;`);
    this.addSql(`create index "media_storage_closed_index" on "media_storage" ("owner_type", "owner_id", "live_until") include ("live_from", "bytes") where "live_until" is not null;`);
    this.addSql(`create index "media_storage_open_index" on "media_storage" ("owner_type", "owner_id", "live_from") include ("bytes") where "live_until" is null;`);

    this.addSql(`create index "jobs_billing_long_index" on "jobs" ("owner_type", "owner_id", "started_at") include ("finished_at", "machine_type", "machine_count", "model_id") where "started_at" is not null and ("finished_at" is null or "finished_at" - "started_at" >= interval '1 day');`);
    this.addSql(`create index "jobs_billing_started_index" on "jobs" ("owner_type", "owner_id", "started_at") include ("finished_at", "machine_type", "machine_count", "model_id") where "started_at" is not null;`);

    // Written by hand: the storage ledger follows media_assets in the statement that changes it
    // (docs/billing.md). An asset counts while it is live, from now() of the transaction that
    // made it so to now() of the one that hid, resized or deleted it.
    this.addSql(`create function "media_storage_ledger"() returns trigger language plpgsql as $$
begin
  if tg_op <> 'INSERT' and old.status = 'live'
     and (tg_op = 'DELETE' or new.status <> 'live' or new.size <> old.size) then
    update media_storage set live_until = now() where asset_id = old.id and live_until is null;
  end if;
  if tg_op <> 'DELETE' and new.status = 'live'
     and (tg_op = 'INSERT' or old.status <> 'live' or new.size <> old.size) then
    insert into media_storage (asset_id, owner_type, owner_id, bytes, live_from)
    values (new.id, new.owner_type, new.owner_id, new.size, now());
  end if;
  return null;
end $$;`);
    this.addSql(`create trigger "media_storage_ledger" after insert or update of "status", "size" or delete on "media_assets" for each row execute function "media_storage_ledger"();`);
    // Assets live before this migration count from when their upload completed.
    this.addSql(`insert into "media_storage" ("asset_id", "owner_type", "owner_id", "bytes", "live_from") select "id", "owner_type", "owner_id", "size", "created_at" from "media_assets" where "status" = 'live';`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop trigger if exists "media_storage_ledger" on "media_assets";`);
    this.addSql(`drop function if exists "media_storage_ledger"();`);
    this.addSql(`drop table if exists "media_storage" cascade;`);

    this.addSql(`drop index "jobs_billing_long_index";`);
    this.addSql(`drop index "jobs_billing_started_index";`);
  }

}
