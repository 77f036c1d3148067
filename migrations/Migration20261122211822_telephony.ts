import { Migration } from '@mikro-orm/migrations';

export class Migration20261122211822_telephony extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "call_records" ("id" bigserial primary key, "provider" int not null, "call_uuid" uuid not null, "call_from" text not null, "call_to" text not null, "extension" bigint null, "didnumber" bigint null, "domain" text not null, "hangup_cause" text not null, "call_direction" text not null, "bill_duration" int not null, "recording_path" text null, "created_at" timestamptz not null, "started_at" timestamptz not null);`);
    this.addSql(`alter table "call_records" add constraint "call_records_call_uuid_unique" unique ("call_uuid");`);
    this.addSql(`create index "call_records_call_from_index" on "call_records" ("call_from");`);
    this.addSql(`create index "call_records_call_to_index" on "call_records" ("call_to");`);
    this.addSql(`create index "call_records_extension_index" on "call_records" ("extension");`);
    this.addSql(`create index "call_records_didnumber_index" on "call_records" ("didnumber");`);
    this.addSql(`create index "call_records_created_at_id_index" on "call_records" ("created_at", "id");`);

    this.addSql(`create table "number_assignments" ("id" uuid not null, "user_id" uuid not null, "phone_number" bigint not null, "extension" bigint not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "number_assignments_pkey" primary key ("id"));`);
    this.addSql(`alter table "number_assignments" add constraint "number_assignments_user_id_unique" unique ("user_id");`);
    this.addSql(`alter table "number_assignments" add constraint "number_assignments_phone_number_unique" unique ("phone_number");`);
    this.addSql(`alter table "number_assignments" add constraint "number_assignments_extension_unique" unique ("extension");`);

    this.addSql(`create table "call_link_windows" ("user_id" uuid not null, "window_start" timestamptz not null, "count" int not null, constraint "call_link_windows_pkey" primary key ("user_id"));`);

    this.addSql(`alter table "number_assignments" add constraint "number_assignments_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "call_link_windows" add constraint "call_link_windows_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "call_records" cascade;`);

    this.addSql(`drop table if exists "number_assignments" cascade;`);

    this.addSql(`drop table if exists "call_link_windows" cascade;`);
  }

}
