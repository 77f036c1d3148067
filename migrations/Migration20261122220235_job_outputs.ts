import { Migration } from '@mikro-orm/migrations';

export class Migration20261122220235_job_outputs extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "jobs" add column "inputs" jsonb not null default '[]';`);

    this.addSql(`create index "media_assets_job_id_index" on "media_assets" ("job_id");`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "jobs" drop column "inputs";`);

    this.addSql(`drop index "media_assets_job_id_index";`);
  }

}
