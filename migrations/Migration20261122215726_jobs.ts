import { Migration } from '@mikro-orm/migrations';

export class Migration20261122215726_jobs extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "deployments" ("id" uuid not null, "owner_type" text not null, "owner_id" uuid not null, "name" text not null, "model_id" uuid not null, "args" jsonb not null, "source_asset_id" uuid null, "target_asset_id" uuid not null, "created_at" timestamptz not null, constraint "deployments_pkey" primary key ("id"));`);
    this.addSql(`create index "deployments_owner_type_owner_id_created_at_id_index" on "deployments" ("owner_type", "owner_id", "created_at", "id");`);

    this.addSql(`create table "jobs" ("id" uuid not null, "deployment_id" uuid not null, "model_id" uuid not null, "owner_type" text not null, "owner_id" uuid not null, "status" text not null default 'queued', "executor" text not null, "external_id" text null, "worker_id" uuid null, "argv" jsonb not null, "container" text not null, "machine_type" text not null, "machine_count" int not null, "timeout_seconds" int not null, "exit_code" int null, "error" text null, "log_tail" text not null default '', "queue_seconds" double precision null, "run_seconds" double precision null, "output" jsonb null, "created_at" timestamptz not null, "started_at" timestamptz null, "finished_at" timestamptz null, "updated_at" timestamptz not null, constraint "jobs_pkey" primary key ("id"));`);
    this.addSql(`create index "jobs_unfinished_index" on "jobs" ("worker_id") where "status" in ('starting', 'running');`);
    this.addSql(`create index "jobs_deployment_id_index" on "jobs" ("deployment_id");`);
    this.addSql(`create index "jobs_model_id_index" on "jobs" ("model_id");`);
    this.addSql(`create index "jobs_owner_type_owner_id_status_index" on "jobs" ("owner_type", "owner_id", "status");`);
    this.addSql(`create index "jobs_owner_type_owner_id_created_at_id_index" on "jobs" ("owner_type", "owner_id", "created_at", "id");`);

    this.addSql(`create table "job_transitions" ("id" bigserial primary key, "job_id" uuid not null, "from_status" text null, "to_status" text not null, "at" timestamptz not null);`);
    this.addSql(`create index "job_transitions_job_id_at_index" on "job_transitions" ("job_id", "at");`);

    this.addSql(`create table "worker_instances" ("id" uuid not null, "host" text not null, "pid" int not null, "started_at" timestamptz not null, "seen_at" timestamptz not null, constraint "worker_instances_pkey" primary key ("id"));`);

    this.addSql(`alter table "jobs" add constraint "jobs_deployment_id_foreign" foreign key ("deployment_id") references "deployments" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "job_transitions" add constraint "job_transitions_job_id_foreign" foreign key ("job_id") references "jobs" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "jobs" drop constraint "jobs_deployment_id_foreign";`);

    this.addSql(`alter table "job_transitions" drop constraint "job_transitions_job_id_foreign";`);

    this.addSql(`drop table if exists "deployments" cascade;`);

    this.addSql(`drop table if exists "jobs" cascade;`);

    this.addSql(`drop table if exists "job_transitions" cascade;`);

    this.addSql(`drop table if exists "worker_instances" cascade;`);
  }

}
