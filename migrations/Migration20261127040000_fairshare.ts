import { Migration } from '@mikro-orm/migrations';

export class Migration20261127040000_fairshare extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "owner_quotas" ("owner_type" text not null, "owner_id" uuid not null, "max_running_jobs" int null, "machines" jsonb not null default '{}', "shares" double precision null, "updated_at" timestamptz not null, constraint "owner_quotas_pkey" primary key ("owner_type", "owner_id"));`);

    this.addSql(`create table "owner_usage" ("owner_type" text not null, "owner_id" uuid not null, "usage" double precision not null default 0, "decayed_at" timestamptz not null default now(), "running_jobs" int not null default 0, "running_machines" jsonb not null default '{}', "running_started_sum" double precision not null default 0, constraint "owner_usage_pkey" primary key ("owner_type", "owner_id"));`);

    this.addSql(`alter table "deployments" add column "priority" text not null default 'normal';`);

    this.addSql(`alter table "jobs" add column "priority_rank" smallint not null default 20, add column "claimed_at" timestamptz null;`);
    this.addSql(`create index "jobs_owner_queue_index" on "jobs" ("owner_type", "owner_id", "priority_rank" desc, "created_at", "id") where "status" = 'queued';`);
    this.addSql(`create index "jobs_dispatch_index" on "jobs" ("owner_type", "owner_id", "machine_type", "priority_rank" desc, "created_at", "id") where "status" = 'queued';`);
    // Jobs claimed before: their usage counts from their claim's transition. Every owner with jobs
    // gets its row (the claim updates it, never creates it), with what it has running now.
    this.addSql(`update "jobs" j set "claimed_at" = coalesce((select max(t."at") from "job_transitions" t where t."job_id" = j."id" and t."to_status" = 'starting'), j."updated_at") where j."status" in ('starting', 'running');`);
    this.addSql(`insert into "owner_usage" ("owner_type", "owner_id", "running_jobs", "running_machines", "running_started_sum")
      select o."owner_type", o."owner_id", coalesce(r."jobs", 0), coalesce(r."machines", '{}'), coalesce(r."started_sum", 0)
      from (select distinct "owner_type", "owner_id" from "jobs") o
      left join (select "owner_type", "owner_id", sum("jobs")::int as "jobs", jsonb_object_agg("machine_type", "machines") as "machines", sum("started_sum") as "started_sum"
                 from (select "owner_type", "owner_id", "machine_type", count(*) as "jobs", sum("machine_count") as "machines",
                              sum("machine_count" * extract(epoch from "claimed_at")) as "started_sum"
                       from "jobs" where "status" in ('starting', 'running') group by 1, 2, 3) m group by 1, 2) r
        on r."owner_type" = o."owner_type" and r."owner_id" = o."owner_id";`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "owner_quotas" cascade;`);

    this.addSql(`drop table if exists "owner_usage" cascade;`);

    this.addSql(`alter table "deployments" drop column "priority";`);

    this.addSql(`drop index "jobs_owner_queue_index";`);
    this.addSql(`drop index "jobs_dispatch_index";`);
    this.addSql(`alter table "jobs" drop column "priority_rank", drop column "claimed_at";`);
  }

}
