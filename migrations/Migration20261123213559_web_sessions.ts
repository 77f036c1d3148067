import { Migration } from '@mikro-orm/migrations';

export class Migration20261123213559_web_sessions extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "session_tokens" ("token_hash" text not null, "session_id" uuid not null, "team_id" uuid null, "expires_at" timestamptz not null, constraint "session_tokens_pkey" primary key ("token_hash"));`);
    this.addSql(`create index "session_tokens_session_id_index" on "session_tokens" ("session_id");`);
    this.addSql(`create index "session_tokens_expires_at_index" on "session_tokens" ("expires_at");`);

    this.addSql(`alter table "session_tokens" add constraint "session_tokens_session_id_foreign" foreign key ("session_id") references "login_sessions" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "session_tokens" add constraint "session_tokens_team_id_foreign" foreign key ("team_id") references "teams" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "login_attempts" add column "return_to" text null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "session_tokens" cascade;`);

    this.addSql(`alter table "login_attempts" drop column "return_to";`);
  }

}
