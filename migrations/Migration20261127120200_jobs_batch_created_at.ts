import { Migration } from '@mikro-orm/migrations';

export class Migration20261127120200_jobs_batch_created_at extends Migration {

  override async up(): Promise<void> {
    // A batch's jobs, newest first, whatever their state (docs/batches.md, "Measured").
    this.addSql(`create index "jobs_batch_created_at_index" on "jobs" ("batch_id", "created_at", "id") where "batch_id" is not null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "jobs_batch_created_at_index";`);
  }

}
