import { Migration } from '@mikro-orm/migrations';

export class Migration20261126152427_models_products extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "model_versions" ("id" uuid not null, "model_id" uuid not null, "sequence" int not null, "container" text not null, "command" text not null, "machine_type" text not null, "machine_count" int not null, "timeout_seconds" int not null, "args" jsonb not null, "secrets" text[] not null, "created_at" timestamptz not null, constraint "model_versions_pkey" primary key ("id"));`);
    this.addSql(`alter table "model_versions" add constraint "model_versions_model_id_sequence_unique" unique ("model_id", "sequence");`);

    this.addSql(`create table "secrets" ("id" uuid not null, "owner_type" text not null, "owner_id" uuid not null, "name" text not null, "sealed_value" text not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "secrets_pkey" primary key ("id"));`);
    this.addSql(`alter table "secrets" add constraint "secrets_owner_type_owner_id_name_unique" unique ("owner_type", "owner_id", "name");`);

    this.addSql(`alter table "models" add column "visibility" text not null default 'public', add column "shared_with" text[] not null default '{}', add column "secrets" text[] not null default '{}';`);

    // Every model that exists already gets its definition as version 1, dated when it was last changed.
    this.addSql(`insert into "model_versions" ("id", "model_id", "sequence", "container", "command", "machine_type", "machine_count", "timeout_seconds", "args", "secrets", "created_at") select gen_random_uuid(), "id", 1, "container", "command", "machine_type", "machine_count", "timeout_seconds", "args", "secrets", "updated_at" from "models";`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "model_versions" cascade;`);

    this.addSql(`drop table if exists "secrets" cascade;`);

    this.addSql(`alter table "models" drop column "visibility", drop column "shared_with", drop column "secrets";`);
  }

}
