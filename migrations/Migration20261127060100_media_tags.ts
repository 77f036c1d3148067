import { Migration } from '@mikro-orm/migrations';

export class Migration20261127060100_media_tags extends Migration {

  override async up(): Promise<void> {
    // One row per tag of a live media asset, in the list's order per owner and tag (docs/media.md,
    // "Listing"): the media list of one tag reads only the rows it answers, however rare the tag.
    this.addSql(`create table "media_tags" ("owner_type" text not null, "owner_id" uuid not null, "tag" text not null, "created_at" timestamptz not null, "id" uuid not null, constraint "media_tags_pkey" primary key ("owner_type", "owner_id", "tag", "created_at", "id"));`);
    this.addSql(`create index "media_tags_id_index" on "media_tags" ("id");`);
    this.addSql(`alter table "media_tags" add constraint "media_tags_id_foreign" foreign key ("id") references "media_assets" ("id") on update cascade on delete cascade;`);
    // Kept by triggers. Inserts: one per statement, set-based, so a bulk copy costs one insert,
    // not one per row. Updates: per row, and only of the assets whose tags, state, owner or time
    // changed (the WHEN clause: other updates never call it). Deleted rows go by the foreign key.
    this.addSql(`create function "media_tags_inserted"() returns trigger language plpgsql as $$
      begin
        insert into media_tags (owner_type, owner_id, tag, created_at, id)
        select distinct n.owner_type, n.owner_id, tag, n.created_at, n.id
        from new_rows n, unnest(n.tags) tag where n.status = 'live';
        return null;
      end $$;`);
    this.addSql(`create function "media_tags_updated"() returns trigger language plpgsql as $$
      begin
        delete from media_tags where id = old.id;
        if new.status = 'live' then
          insert into media_tags (owner_type, owner_id, tag, created_at, id)
          select distinct new.owner_type, new.owner_id, tag, new.created_at, new.id from unnest(new.tags) tag;
        end if;
        return null;
      end $$;`);
    this.addSql(`create trigger "media_tags_inserted" after insert on "media_assets" referencing new table as new_rows for each statement execute function "media_tags_inserted"();`);
    this.addSql(`create trigger "media_tags_updated" after update of "tags", "status", "owner_type", "owner_id", "created_at" on "media_assets" for each row when ((new.tags, new.status, new.owner_type, new.owner_id, new.created_at) is distinct from (old.tags, old.status, old.owner_type, old.owner_id, old.created_at)) execute function "media_tags_updated"();`);
    this.addSql(`insert into "media_tags" ("owner_type", "owner_id", "tag", "created_at", "id") select distinct "owner_type", "owner_id", tag, "created_at", "id" from "media_assets", unnest("tags") tag where "status" = 'live';`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop trigger "media_tags_updated" on "media_assets";`);
    this.addSql(`drop trigger "media_tags_inserted" on "media_assets";`);
    this.addSql(`drop function "media_tags_updated"();`);
    this.addSql(`drop function "media_tags_inserted"();`);
    this.addSql(`drop table if exists "media_tags" cascade;`);
  }

}
