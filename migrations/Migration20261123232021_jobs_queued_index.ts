import { Migration } from '@mikro-orm/migrations';

export class Migration20261123232021_jobs_queued_index extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create index "jobs_queued_index" on "jobs" ("created_at") where "status" = 'queued';`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "jobs_queued_index";`);
  }

}
