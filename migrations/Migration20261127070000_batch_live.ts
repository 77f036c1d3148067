import { Migration } from '@mikro-orm/migrations';

export class Migration20261127070000_batch_live extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "jobs" add column "batch_item" int null;`);
    this.addSql(`create index "jobs_batch_item_index" on "jobs" ("batch_id", "batch_item") where "batch_id" is not null;`);

    this.addSql(`alter table "batches" add column "completion_sent_at" timestamptz null;`);

    this.addSql(`alter table "webhook_deliveries" alter column "job_id" drop not null;`);
    this.addSql(`alter table "webhook_deliveries" add column "batch_id" uuid null;`);
    this.addSql(`alter table "webhook_deliveries" add constraint "webhook_deliveries_batch_id_foreign" foreign key ("batch_id") references "batches" ("id") on update cascade on delete cascade;`);
    this.addSql(`create index "webhook_deliveries_batch_id_index" on "webhook_deliveries" ("batch_id") where "batch_id" is not null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "webhook_deliveries_batch_id_index";`);
    this.addSql(`alter table "webhook_deliveries" drop constraint "webhook_deliveries_batch_id_foreign";`);
    this.addSql(`alter table "webhook_deliveries" drop column "batch_id";`);
    this.addSql(`delete from "webhook_deliveries" where "job_id" is null;`);
    this.addSql(`alter table "webhook_deliveries" alter column "job_id" set not null;`);

    this.addSql(`alter table "batches" drop column "completion_sent_at";`);

    this.addSql(`drop index "jobs_batch_item_index";`);
    this.addSql(`alter table "jobs" drop column "batch_item";`);
  }

}
