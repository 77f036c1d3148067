import { Migration } from '@mikro-orm/migrations';

export class Migration20261127050000_job_versions_secrets extends Migration {

  override async up(): Promise<void> {
    // The model version a job runs, and the names (never the values) of the secrets it gets.
    // Jobs made before versions existed keep null: what they ran is in their own columns.
    this.addSql(`alter table "jobs" add column "model_version_id" uuid null, add column "secrets" text[] not null default '{}';`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "jobs" drop column "model_version_id", drop column "secrets";`);
  }

}
