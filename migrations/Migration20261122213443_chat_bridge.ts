import { Migration } from '@mikro-orm/migrations';

export class Migration20261122213443_chat_bridge extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "chat_bridge_users" ("id" uuid not null, "username" text not null, "password_hash" text not null, "matrix_user_id" text not null, "access_token_sealed" text not null, "created_at" timestamptz not null, constraint "chat_bridge_users_pkey" primary key ("id"));`);
    this.addSql(`alter table "chat_bridge_users" add constraint "chat_bridge_users_username_unique" unique ("username");`);

    this.addSql(`create table "chat_bridge_api_keys" ("id" uuid not null, "user_id" uuid not null, "key_hash" text not null, "created_at" timestamptz not null, "last_used_at" timestamptz null, constraint "chat_bridge_api_keys_pkey" primary key ("id"));`);
    this.addSql(`create index "chat_bridge_api_keys_user_id_index" on "chat_bridge_api_keys" ("user_id");`);
    this.addSql(`alter table "chat_bridge_api_keys" add constraint "chat_bridge_api_keys_key_hash_unique" unique ("key_hash");`);

    this.addSql(`create table "chat_bridge_dendrites" ("id" uuid not null, "user_id" uuid not null, "hostname" text not null, "port" int not null, "key_id" text not null, "public_key" text not null, "created_at" timestamptz not null, constraint "chat_bridge_dendrites_pkey" primary key ("id"));`);
    this.addSql(`alter table "chat_bridge_dendrites" add constraint "chat_bridge_dendrites_hostname_unique" unique ("hostname");`);
    this.addSql(`alter table "chat_bridge_dendrites" add constraint "chat_bridge_dendrites_port_unique" unique ("port");`);
    this.addSql(`create index "chat_bridge_dendrites_user_id_created_at_index" on "chat_bridge_dendrites" ("user_id", "created_at");`);

    this.addSql(`create table "chat_bridge_login_failures" ("id" uuid not null, "scope" text not null, "key" text not null, "created_at" timestamptz not null, constraint "chat_bridge_login_failures_pkey" primary key ("id"));`);
    this.addSql(`create index "chat_bridge_login_failures_created_at_index" on "chat_bridge_login_failures" ("created_at");`);
    this.addSql(`create index "chat_bridge_login_failures_scope_key_created_at_index" on "chat_bridge_login_failures" ("scope", "key", "created_at");`);

    this.addSql(`create table "chat_bridge_matterbridges" ("id" uuid not null, "user_id" uuid not null, "name" text not null, "network_name" text not null, "platform" text not null, "channel" text not null, "settings" jsonb not null, "token_sealed" text not null, "matrix_room_id" text not null, "matrix_room_alias" text not null, "created_at" timestamptz not null, constraint "chat_bridge_matterbridges_pkey" primary key ("id"));`);
    this.addSql(`create index "chat_bridge_matterbridges_user_id_created_at_index" on "chat_bridge_matterbridges" ("user_id", "created_at");`);
    this.addSql(`alter table "chat_bridge_matterbridges" add constraint "chat_bridge_matterbridges_user_id_name_unique" unique ("user_id", "name");`);

    this.addSql(`alter table "chat_bridge_api_keys" add constraint "chat_bridge_api_keys_user_id_foreign" foreign key ("user_id") references "chat_bridge_users" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "chat_bridge_dendrites" add constraint "chat_bridge_dendrites_user_id_foreign" foreign key ("user_id") references "chat_bridge_users" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "chat_bridge_matterbridges" add constraint "chat_bridge_matterbridges_user_id_foreign" foreign key ("user_id") references "chat_bridge_users" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "chat_bridge_api_keys" drop constraint "chat_bridge_api_keys_user_id_foreign";`);

    this.addSql(`alter table "chat_bridge_dendrites" drop constraint "chat_bridge_dendrites_user_id_foreign";`);

    this.addSql(`alter table "chat_bridge_matterbridges" drop constraint "chat_bridge_matterbridges_user_id_foreign";`);

    this.addSql(`drop table if exists "chat_bridge_users" cascade;`);

    this.addSql(`drop table if exists "chat_bridge_api_keys" cascade;`);

    this.addSql(`drop table if exists "chat_bridge_dendrites" cascade;`);

    this.addSql(`drop table if exists "chat_bridge_login_failures" cascade;`);

    this.addSql(`drop table if exists "chat_bridge_matterbridges" cascade;`);
  }

}
