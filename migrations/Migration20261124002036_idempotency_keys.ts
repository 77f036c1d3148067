import { Migration } from '@mikro-orm/migrations';

export class Migration20261124002036_idempotency_keys extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "idempotency_keys" ("id" uuid not null, "owner_type" text not null, "owner_id" uuid not null, "key_hash" text not null, "fingerprint" text null, "status" text not null default 'running', "locked_until" timestamptz not null, "response" bytea null, "created_at" timestamptz not null, constraint "idempotency_keys_pkey" primary key ("id"));`);
    this.addSql(`create index "idempotency_keys_created_at_index" on "idempotency_keys" ("created_at");`);
    this.addSql(`alter table "idempotency_keys" add constraint "idempotency_keys_owner_type_owner_id_key_hash_unique" unique ("owner_type", "owner_id", "key_hash");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "idempotency_keys" cascade;`);
  }

}
