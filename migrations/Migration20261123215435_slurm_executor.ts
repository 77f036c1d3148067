import { Migration } from '@mikro-orm/migrations';

export class Migration20261123215435_slurm_executor extends Migration {

  override async up(): Promise<void> {
    this.addSql(`drop index "jobs_unfinished_index";`);

    this.addSql(`alter table "jobs" add column "nodes" jsonb not null default '[]', add column "pending_reason" text null;`);
    // Workers now let go of jobs that have ended (a canceled one once it is stopped).
    this.addSql(`update "jobs" set "worker_id" = null where "status" in ('succeeded', 'failed', 'canceled');`);
    this.addSql(`create index "jobs_followed_index" on "jobs" ("worker_id") where "status" in ('starting', 'running') or ("status" = 'canceled' and "worker_id" is not null);`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "jobs_followed_index";`);
    this.addSql(`alter table "jobs" drop column "nodes", drop column "pending_reason";`);

    this.addSql(`CREATE INDEX jobs_unfinished_index ON public.jobs USING btree (worker_id) WHERE (status = ANY (ARRAY['starting'::text, 'running'::text]));`);
  }

}
