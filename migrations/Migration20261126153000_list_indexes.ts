import { Migration } from '@mikro-orm/migrations';

export class Migration20261126153000_list_indexes extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create index "media_assets_live_owner_index" on "media_assets" ("owner_type", "owner_id", "created_at", "id") where "status" = 'live';`);
    this.addSql(`drop index "media_assets_owner_type_owner_id_created_at_id_index";`);
    this.addSql(`create index "api_keys_owner_created_at_index" on "api_keys" ("owner_type", "owner_id", "created_at", "id");`);
    this.addSql(`drop index "api_keys_owner_type_owner_id_index";`);
    this.addSql(`create index "models_owner_created_at_index" on "models" ("owner_type", "owner_id", "created_at", "id");`);
    this.addSql(`drop index "models_owner_type_owner_id_index";`);
    this.addSql(`create index "webhook_deliveries_job_created_at_id_index" on "webhook_deliveries" ("job_id", "created_at", "id");`);
    this.addSql(`drop index "webhook_deliveries_job_id_created_at_index";`);
    this.addSql(`create index "team_audit_team_created_at_id_index" on "team_audit" ("team_id", "created_at", "id");`);
    this.addSql(`drop index "team_audit_team_id_created_at_index";`);
    this.addSql(`create index "team_audit_created_at_brin" on "team_audit" using brin ("created_at");`);
    this.addSql(`drop index "team_audit_created_at_index";`);
    // The tag filters are checked within the scan budget, in the keyset index's order: no query reads these.
    this.addSql(`drop index "media_assets_tags_gin";`);
    this.addSql(`drop index "models_tags_index";`);
  }

  override async down(): Promise<void> {
    this.addSql(`create index "models_tags_index" on "models" using gin ("tags");`);
    this.addSql(`create index "media_assets_tags_gin" on "media_assets" using gin ("tags");`);
    this.addSql(`create index "team_audit_created_at_index" on "team_audit" ("created_at");`);
    this.addSql(`drop index "team_audit_created_at_brin";`);
    this.addSql(`create index "team_audit_team_id_created_at_index" on "team_audit" ("team_id", "created_at");`);
    this.addSql(`drop index "team_audit_team_created_at_id_index";`);
    this.addSql(`create index "webhook_deliveries_job_id_created_at_index" on "webhook_deliveries" ("job_id", "created_at");`);
    this.addSql(`drop index "webhook_deliveries_job_created_at_id_index";`);
    this.addSql(`create index "models_owner_type_owner_id_index" on "models" ("owner_type", "owner_id");`);
    this.addSql(`drop index "models_owner_created_at_index";`);
    this.addSql(`create index "api_keys_owner_type_owner_id_index" on "api_keys" ("owner_type", "owner_id");`);
    this.addSql(`drop index "api_keys_owner_created_at_index";`);
    this.addSql(`create index "media_assets_owner_type_owner_id_created_at_id_index" on "media_assets" ("owner_type", "owner_id", "created_at", "id");`);
    this.addSql(`drop index "media_assets_live_owner_index";`);
  }

}
