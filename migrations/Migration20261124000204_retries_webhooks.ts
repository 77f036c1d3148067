import { Migration } from '@mikro-orm/migrations';

export class Migration20261124000204_retries_webhooks extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "job_log_batches" ("id" bigint not null, "job_id" uuid not null, "lines" jsonb not null, "total_bytes" int not null, "at" timestamptz not null, constraint "job_log_batches_pkey" primary key ("id"));`);
    this.addSql(`create index "job_log_batches_job_id_id_index" on "job_log_batches" ("job_id", "id");`);

    this.addSql(`create table "webhook_deliveries" ("id" text not null, "job_id" uuid not null, "owner_type" text not null, "owner_id" uuid not null, "event" text not null, "url" text not null, "status" text not null default 'pending', "attempts" int not null default 0, "body" text null, "attempt_started_at" timestamptz null, "next_attempt_at" timestamptz null, "delivered_at" timestamptz null, "created_at" timestamptz not null, constraint "webhook_deliveries_pkey" primary key ("id"));`);
    this.addSql(`create index "webhook_deliveries_job_id_created_at_index" on "webhook_deliveries" ("job_id", "created_at");`);

    this.addSql(`create table "webhook_attempts" ("id" bigserial primary key, "delivery_id" text not null, "attempt" int not null, "started_at" timestamptz not null, "duration_ms" int null, "response_code" int null, "outcome" text not null, "error" text null, "response" text null);`);
    this.addSql(`alter table "webhook_attempts" add constraint "webhook_attempts_delivery_id_attempt_unique" unique ("delivery_id", "attempt");`);

    this.addSql(`create table "webhook_secrets" ("id" uuid not null, "owner_type" text not null, "owner_id" uuid not null, "key" text not null, "previous_key" text null, "rotated_at" timestamptz null, "created_at" timestamptz not null, constraint "webhook_secrets_pkey" primary key ("id"));`);
    this.addSql(`alter table "webhook_secrets" add constraint "webhook_secrets_owner_type_owner_id_unique" unique ("owner_type", "owner_id");`);

    this.addSql(`alter table "job_log_batches" add constraint "job_log_batches_job_id_foreign" foreign key ("job_id") references "jobs" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "webhook_deliveries" add constraint "webhook_deliveries_job_id_foreign" foreign key ("job_id") references "jobs" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "webhook_attempts" add constraint "webhook_attempts_delivery_id_foreign" foreign key ("delivery_id") references "webhook_deliveries" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "deployments" add column "webhook" text null, add column "webhook_events_filter" text[] not null default '{}';`);

    this.addSql(`alter table "jobs" add column "max_retries" int not null default 0, add column "attempt" int not null default 1, add column "retry_of" uuid null, add column "infrastructure_failure" boolean not null default false, add column "deadline_at" timestamptz null;`);
    this.addSql(`create index "jobs_retry_of_index" on "jobs" ("retry_of") where "retry_of" is not null;`);

    this.addSql(`alter table "models" add column "max_retries" int not null default 0;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "webhook_attempts" drop constraint "webhook_attempts_delivery_id_foreign";`);

    this.addSql(`drop table if exists "job_log_batches" cascade;`);

    this.addSql(`drop table if exists "webhook_deliveries" cascade;`);

    this.addSql(`drop table if exists "webhook_attempts" cascade;`);

    this.addSql(`drop table if exists "webhook_secrets" cascade;`);

    this.addSql(`alter table "deployments" drop column "webhook", drop column "webhook_events_filter";`);

    this.addSql(`drop index "jobs_retry_of_index";`);
    this.addSql(`alter table "jobs" drop column "max_retries", drop column "attempt", drop column "retry_of", drop column "infrastructure_failure", drop column "deadline_at";`);

    this.addSql(`alter table "models" drop column "max_retries";`);
  }

}
