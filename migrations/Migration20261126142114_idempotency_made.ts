import { Migration } from '@mikro-orm/migrations';

export class Migration20261126142114_idempotency_made extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "idempotency_keys" add column "made" text[] not null default '{}';`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "idempotency_keys" drop column "made";`);
  }

}
