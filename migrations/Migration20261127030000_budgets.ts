import { Migration } from '@mikro-orm/migrations';

export class Migration20261127030000_budgets extends Migration {

  override async up(): Promise<void> {
    // Machine-seconds per owner, UTC day, machine type and model, of jobs that have ended (docs/governance.md).
    this.addSql(`create table "spend_daily" ("owner_type" text not null, "owner_id" uuid not null, "day" date not null, "machine_type" text not null, "model_id" uuid not null, "machine_seconds" numeric not null default 0, "jobs" int not null default 0, constraint "spend_daily_pkey" primary key ("owner_type", "owner_id", "day", "machine_type", "model_id"));`);
    this.addSql(`create table "budgets" ("owner_type" text not null, "owner_id" uuid not null, "monthly_limit" numeric not null, "action" text not null, "webhook" text null, "updated_at" timestamptz not null, constraint "budgets_pkey" primary key ("owner_type", "owner_id"), constraint "budgets_monthly_limit_check" check ("monthly_limit" > 0));`);
    this.addSql(`create table "budget_notices" ("owner_type" text not null, "owner_id" uuid not null, "period_start" date not null, "threshold" int not null, "spent" numeric not null, "monthly_limit" numeric not null, "at" timestamptz not null, constraint "budget_notices_pkey" primary key ("owner_type", "owner_id", "period_start", "threshold"));`);
    // What an owner's unfinished jobs may still cost, read by every budget check.
    this.addSql(`create index "jobs_unfinished_owner_index" on "jobs" ("owner_type", "owner_id") include ("machine_type", "machine_count", "timeout_seconds", "started_at") where "status" in ('queued', 'starting', 'running');`);
    // A budget's threshold message is about no job.
    this.addSql(`alter table "webhook_deliveries" alter column "job_id" drop not null;`);
    // The jobs that ended before the rollup existed, split over the UTC days they ran in.
    this.addSql(`insert into "spend_daily" ("owner_type", "owner_id", "day", "machine_type", "model_id", "machine_seconds", "jobs")
      select j.owner_type, j.owner_id, (d at time zone 'UTC')::date, j.machine_type, j.model_id,
        sum(j.machine_count * extract(epoch from least(greatest(j.finished_at, j.started_at), d + interval '24 hours') - greatest(j.started_at, d))),
        (count(*) filter (where d = date_trunc('day', j.started_at, 'UTC')))::int
      from "jobs" j cross join lateral generate_series(date_trunc('day', j.started_at, 'UTC'), greatest(j.finished_at, j.started_at), interval '24 hours') d
      where j.started_at is not null and j.finished_at is not null
      group by 1, 2, 3, 4, 5;`);
  }

  override async down(): Promise<void> {
    this.addSql(`delete from "webhook_deliveries" where "job_id" is null;`);
    this.addSql(`alter table "webhook_deliveries" alter column "job_id" set not null;`);
    this.addSql(`drop index "jobs_unfinished_owner_index";`);
    this.addSql(`drop table if exists "budget_notices" cascade;`);
    this.addSql(`drop table if exists "budgets" cascade;`);
    this.addSql(`drop table if exists "spend_daily" cascade;`);
  }

}
