import { Migration } from '@mikro-orm/migrations';

export class Migration20261127110000_job_cost_order extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "jobs" add column "machine_micros" bigint null;`);
    // The jobs that had already ended, as the ending statement computes it (billing's exact time).
    this.addSql(`update "jobs" set "machine_micros" = case when "started_at" is null then 0
      else "machine_count" * (extract(epoch from greatest("finished_at", "started_at") - "started_at") * 1000000)::bigint end
      where "finished_at" is not null;`);
    this.addSql(`create index "jobs_owner_cost_index" on "jobs" ("owner_type", "owner_id", "machine_type", "machine_micros" desc, "id" desc) where "machine_micros" is not null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "jobs_owner_cost_index";`);
    this.addSql(`alter table "jobs" drop column "machine_micros";`);
  }

}
