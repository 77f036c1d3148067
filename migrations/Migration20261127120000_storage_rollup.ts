import { Migration } from '@mikro-orm/migrations';

/**
 * The rows of the storage ledger a trigger sees (`source`), each with its sign: +1 added, -1
 * taken away. A span adds its bytes to `storage_open` while it is open, and its byte-seconds
 * per UTC day to `storage_daily` once it has ended; an update takes the old row away and adds
 * the new (a data-modifying CTE runs whether read or not). Rows in day order, so that two
 * statements lock the days they share in one order.
 */
function rollUp(source: string): string {
  return `
    with changes as (${source}),
    opened as (
      insert into storage_open as s (owner_type, owner_id, day, bytes, byte_seconds_in)
      select owner_type, owner_id, (live_from at time zone 'UTC')::date,
        sum(sign * bytes), sum(sign * bytes * extract(epoch from live_from - date_trunc('day', live_from, 'UTC')))
      from changes where live_until is null
      group by 1, 2, 3 order by 3
      on conflict (owner_type, owner_id, day) do update
        set bytes = s.bytes + excluded.bytes, byte_seconds_in = s.byte_seconds_in + excluded.byte_seconds_in)
    insert into storage_daily as s (owner_type, owner_id, day, byte_seconds)
    select c.owner_type, c.owner_id, (d at time zone 'UTC')::date,
      sum(c.sign * c.bytes * extract(epoch from least(greatest(c.live_until, c.live_from), d + interval '24 hours')
          - greatest(c.live_from, d)))
    from changes c cross join lateral generate_series(date_trunc('day', c.live_from, 'UTC'),
           greatest(c.live_until, c.live_from), interval '24 hours') d
    where c.live_until is not null
    group by 1, 2, 3 order by 3
    on conflict (owner_type, owner_id, day) do update set byte_seconds = s.byte_seconds + excluded.byte_seconds;`;
}

const columns = 'owner_type, owner_id, bytes::numeric as bytes, live_from, live_until';

export class Migration20261127120000_storage_rollup extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "storage_daily" ("owner_type" text not null, "owner_id" uuid not null, "day" date not null, "byte_seconds" numeric not null default 0, constraint "storage_daily_pkey" primary key ("owner_type", "owner_id", "day"));`);
    this.addSql(`create table "storage_open" ("owner_type" text not null, "owner_id" uuid not null, "day" date not null, "bytes" numeric not null default 0, "byte_seconds_in" numeric not null default 0, constraint "storage_open_pkey" primary key ("owner_type", "owner_id", "day"));`);
    // Once per statement on the ledger (transition tables), set-based: a bulk change costs one
    // statement per table, not one per span.
    this.addSql(`create function "media_storage_rollup_inserted"() returns trigger language plpgsql as $$
      begin ${rollUp(`select ${columns}, 1 as sign from new_rows`)} return null; end $$;`);
    this.addSql(`create function "media_storage_rollup_updated"() returns trigger language plpgsql as $$
      begin ${rollUp(`select ${columns}, -1 as sign from old_rows union all select ${columns}, 1 from new_rows`)} return null; end $$;`);
    this.addSql(`create function "media_storage_rollup_deleted"() returns trigger language plpgsql as $$
      begin ${rollUp(`select ${columns}, -1 as sign from old_rows`)} return null; end $$;`);
    this.addSql(`create trigger "media_storage_rollup_inserted" after insert on "media_storage" referencing new table as new_rows for each statement execute function "media_storage_rollup_inserted"();`);
    this.addSql(`create trigger "media_storage_rollup_updated" after update on "media_storage" referencing old table as old_rows new table as new_rows for each statement execute function "media_storage_rollup_updated"();`);
    this.addSql(`create trigger "media_storage_rollup_deleted" after delete on "media_storage" referencing old table as old_rows for each statement execute function "media_storage_rollup_deleted"();`);
    // The ledger as it stands.
    this.addSql(rollUp(`select ${columns}, 1 as sign from media_storage`).trim());
  }

  override async down(): Promise<void> {
    for (const op of ['inserted', 'updated', 'deleted']) {
      this.addSql(`drop trigger "media_storage_rollup_${op}" on "media_storage";`);
      this.addSql(`drop function "media_storage_rollup_${op}"();`);
    }
    this.addSql(`drop table if exists "storage_daily" cascade;`);
    this.addSql(`drop table if exists "storage_open" cascade;`);
  }

}
