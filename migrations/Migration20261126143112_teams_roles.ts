import { Migration } from '@mikro-orm/migrations';

export class Migration20261126143112_teams_roles extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "team_audit" ("id" uuid not null, "team_id" uuid not null, "created_at" timestamptz not null, "actor_user_id" uuid null, "actor_via" text not null, "actor_api_key_id" uuid null, "action" text not null, "target_type" text not null, "target_id" text null, "details" jsonb not null, "client_address" text null, "request_id" text null, constraint "team_audit_pkey" primary key ("id"));`);
    this.addSql(`create index "team_audit_created_at_index" on "team_audit" ("created_at");`);
    this.addSql(`create index "team_audit_team_id_created_at_index" on "team_audit" ("team_id", "created_at");`);

    this.addSql(`create table "team_invites" ("id" uuid not null, "team_id" uuid not null, "email" text null, "username" text null, "role" text not null, "token_hash" text not null, "invited_by_id" uuid not null, "status" text not null default 'pending', "mail_state" text not null default 'none', "mail_error" text null, "expires_at" timestamptz not null, "created_at" timestamptz not null, "answered_at" timestamptz null, constraint "team_invites_pkey" primary key ("id"));`);
    this.addSql(`create index "team_invites_email_index" on "team_invites" ("email");`);
    this.addSql(`create index "team_invites_username_index" on "team_invites" ("username");`);
    this.addSql(`alter table "team_invites" add constraint "team_invites_token_hash_unique" unique ("token_hash");`);
    this.addSql(`create index "team_invites_team_id_status_index" on "team_invites" ("team_id", "status");`);

    this.addSql(`alter table "team_invites" add constraint "team_invites_team_id_foreign" foreign key ("team_id") references "teams" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "team_invites" add constraint "team_invites_invited_by_id_foreign" foreign key ("invited_by_id") references "users" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "api_keys" add column "role" text null;`);
    // Team keys made before roles acted as members.
    this.addSql(`update "api_keys" set "role" = 'member' where "owner_type" = 'team';`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "team_audit" cascade;`);

    this.addSql(`drop table if exists "team_invites" cascade;`);

    this.addSql(`alter table "api_keys" drop column "role";`);
  }

}
