import { Migration } from '@mikro-orm/migrations';

export class Migration20261123221725_rate_limits extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "rate_limits" ("key" varchar(255) not null, "points" int not null default 0, "expire" bigint null, constraint "rate_limits_pkey" primary key ("key"));`);

    this.addSql(`drop table if exists "call_link_windows" cascade;`);

    this.addSql(`drop table if exists "chat_bridge_login_failures" cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`create table "call_link_windows" ("user_id" uuid not null, "window_start" timestamptz(6) not null, "count" int4 not null, constraint "call_link_windows_pkey" primary key ("user_id"));`);

    this.addSql(`create table "chat_bridge_login_failures" ("id" uuid not null, "scope" text not null, "key" text not null, "created_at" timestamptz(6) not null, constraint "chat_bridge_login_failures_pkey" primary key ("id"));`);
    this.addSql(`create index "chat_bridge_login_failures_created_at_index" on "chat_bridge_login_failures" ("created_at");`);
    this.addSql(`create index "chat_bridge_login_failures_scope_key_created_at_index" on "chat_bridge_login_failures" ("scope", "key", "created_at");`);

    this.addSql(`alter table "call_link_windows" add constraint "call_link_windows_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade on delete cascade;`);

    this.addSql(`drop table if exists "rate_limits" cascade;`);
  }

}
