import { Migration } from '@mikro-orm/migrations';

export class Migration20261127060000_job_list_indexes extends Migration {

  override async up(): Promise<void> {
    // The jobs list by status and by model: each in the list's order (docs/architecture.md, "Lists").
    // The status one replaces (owner, status), whose counts read the same leading columns.
    this.addSql(`create index "jobs_owner_status_created_at_index" on "jobs" ("owner_type", "owner_id", "status", "created_at", "id");`);
    this.addSql(`drop index "jobs_owner_type_owner_id_status_index";`);
    this.addSql(`create index "jobs_owner_model_created_at_index" on "jobs" ("owner_type", "owner_id", "model_id", "created_at", "id");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "jobs_owner_model_created_at_index";`);
    this.addSql(`create index "jobs_owner_type_owner_id_status_index" on "jobs" ("owner_type", "owner_id", "status");`);
    this.addSql(`drop index "jobs_owner_status_created_at_index";`);
  }

}
