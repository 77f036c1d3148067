import { Migration } from '@mikro-orm/migrations';

export class Migration20261122211702_media extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "media_assets" ("id" uuid not null, "owner_type" text not null, "owner_id" uuid not null, "type" text not null default 'source_asset', "status" text not null default 'uploading', "image_name" text not null, "extension" text not null, "content_type" text not null, "size" bigint not null default 0, "sha256" text null, "tags" text[] not null default '{}', "job_id" uuid null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "media_assets_pkey" primary key ("id"));`);
    this.addSql(`create index "media_assets_status_index" on "media_assets" ("status");`);
    this.addSql(`create index "media_assets_tags_gin" on "media_assets" using gin ("tags");`);
    this.addSql(`create index "media_assets_owner_type_owner_id_created_at_id_index" on "media_assets" ("owner_type", "owner_id", "created_at", "id");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "media_assets" cascade;`);
  }

}
