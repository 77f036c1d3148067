import { Migration } from '@mikro-orm/migrations';

export class Migration20261122140819_init extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "users" ("id" uuid not null, "subject" text not null, "username" text not null, "email" text null, "email_verified" boolean not null default false, "name" text null, "nickname" text null, "picture" text null, "phone_number" text null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "users_pkey" primary key ("id"));`);
    this.addSql(`alter table "users" add constraint "users_subject_unique" unique ("subject");`);

    this.addSql(`create table "teams" ("id" uuid not null, "name" text not null, "created_by_id" uuid not null, "created_at" timestamptz not null, constraint "teams_pkey" primary key ("id"));`);

    this.addSql(`create table "team_members" ("id" uuid not null, "team_id" uuid not null, "user_id" uuid not null, "role" text not null default 'member', "created_at" timestamptz not null, constraint "team_members_pkey" primary key ("id"));`);
    this.addSql(`create index "team_members_user_id_index" on "team_members" ("user_id");`);
    this.addSql(`alter table "team_members" add constraint "team_members_team_id_user_id_unique" unique ("team_id", "user_id");`);

    this.addSql(`create table "api_keys" ("id" uuid not null, "name" text not null, "key_hash" text not null, "owner_type" text not null, "owner_id" uuid not null, "created_by_id" uuid not null, "team_id" uuid null, "created_at" timestamptz not null, "last_used_at" timestamptz null, "revoked_at" timestamptz null, constraint "api_keys_pkey" primary key ("id"));`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_key_hash_unique" unique ("key_hash");`);
    this.addSql(`create index "api_keys_owner_type_owner_id_index" on "api_keys" ("owner_type", "owner_id");`);

    this.addSql(`alter table "teams" add constraint "teams_created_by_id_foreign" foreign key ("created_by_id") references "users" ("id") on update cascade on delete restrict;`);

    this.addSql(`alter table "team_members" add constraint "team_members_team_id_foreign" foreign key ("team_id") references "teams" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "team_members" add constraint "team_members_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "api_keys" add constraint "api_keys_created_by_id_foreign" foreign key ("created_by_id") references "users" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_team_id_foreign" foreign key ("team_id") references "teams" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "teams" drop constraint "teams_created_by_id_foreign";`);

    this.addSql(`alter table "team_members" drop constraint "team_members_user_id_foreign";`);

    this.addSql(`alter table "api_keys" drop constraint "api_keys_created_by_id_foreign";`);

    this.addSql(`alter table "team_members" drop constraint "team_members_team_id_foreign";`);

    this.addSql(`alter table "api_keys" drop constraint "api_keys_team_id_foreign";`);

    this.addSql(`drop table if exists "users" cascade;`);

    this.addSql(`drop table if exists "teams" cascade;`);

    this.addSql(`drop table if exists "team_members" cascade;`);

    this.addSql(`drop table if exists "api_keys" cascade;`);
  }

}
