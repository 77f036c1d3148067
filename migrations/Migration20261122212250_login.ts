import { Migration } from '@mikro-orm/migrations';

export class Migration20261122212250_login extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "dev_accounts" ("username" text not null, "password_hash" text not null, "email" text null, "name" text null, "failed_sign_ins" int not null default 0, "locked_until" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "dev_accounts_pkey" primary key ("username"));`);

    this.addSql(`create table "login_attempts" ("state_hash" text not null, "code_verifier" text not null, "nonce" text not null, "redirect_uri" text not null, "binding_hash" text null, "expires_at" timestamptz not null, constraint "login_attempts_pkey" primary key ("state_hash"));`);
    this.addSql(`create index "login_attempts_expires_at_index" on "login_attempts" ("expires_at");`);

    this.addSql(`create table "oidc_provider_state" ("model" text not null, "id" text not null, "payload" jsonb not null, "grant_id" text null, "uid" text null, "user_code" text null, "expires_at" timestamptz null, "consumed_at" timestamptz null, constraint "oidc_provider_state_pkey" primary key ("model", "id"));`);
    this.addSql(`create index "oidc_provider_state_expires_at_index" on "oidc_provider_state" ("expires_at");`);
    this.addSql(`create index "oidc_provider_state_model_uid_index" on "oidc_provider_state" ("model", "uid");`);
    this.addSql(`create index "oidc_provider_state_model_grant_id_index" on "oidc_provider_state" ("model", "grant_id");`);

    this.addSql(`create table "login_sessions" ("id" uuid not null, "id_hash" text not null, "user_id" uuid not null, "refresh_token_hash" text null, "created_at" timestamptz not null, "expires_at" timestamptz not null, constraint "login_sessions_pkey" primary key ("id"));`);
    this.addSql(`alter table "login_sessions" add constraint "login_sessions_id_hash_unique" unique ("id_hash");`);
    this.addSql(`alter table "login_sessions" add constraint "login_sessions_refresh_token_hash_unique" unique ("refresh_token_hash");`);
    this.addSql(`create index "login_sessions_expires_at_index" on "login_sessions" ("expires_at");`);

    this.addSql(`alter table "login_sessions" add constraint "login_sessions_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "dev_accounts" cascade;`);

    this.addSql(`drop table if exists "login_attempts" cascade;`);

    this.addSql(`drop table if exists "oidc_provider_state" cascade;`);

    this.addSql(`drop table if exists "login_sessions" cascade;`);
  }

}
