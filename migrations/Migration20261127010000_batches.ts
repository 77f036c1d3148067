import { Migration } from '@mikro-orm/migrations';

export class Migration20261127010000_batches extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "batches" ("id" uuid not null, "owner_type" text not null, "owner_id" uuid not null, "name" text not null, "model_id" uuid not null, "args" jsonb not null, "inputs" jsonb not null, "status" text not null default 'running', "total" int not null, "created_at" timestamptz not null, "started_at" timestamptz null, "finished_at" timestamptz null, "webhook" text null, "webhook_events_filter" text[] not null default '{}', constraint "batches_pkey" primary key ("id"));`);
    this.addSql(`create index "batches_owner_type_owner_id_created_at_id_index" on "batches" ("owner_type", "owner_id", "created_at", "id");`);

    this.addSql(`alter table "jobs" add column "batch_id" uuid null;`);
    this.addSql(`alter table "jobs" add constraint "jobs_batch_id_foreign" foreign key ("batch_id") references "batches" ("id") on update cascade on delete cascade;`);
    this.addSql(`create index "jobs_batch_status_index" on "jobs" ("batch_id", "status", "created_at", "id");`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "jobs" drop constraint "jobs_batch_id_foreign";`);

    this.addSql(`drop table if exists "batches" cascade;`);

    this.addSql(`drop index "jobs_batch_status_index";`);
    this.addSql(`alter table "jobs" drop column "batch_id";`);
  }

}
