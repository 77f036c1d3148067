import { Migration } from '@mikro-orm/migrations';

export class Migration20261122211424_models extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "models" ("id" uuid not null, "name" text not null, "version" text not null default '', "description" text null, "container" text not null, "command" text not null default '{args}', "machine_type" text not null default 'cpu', "machine_count" int not null default 1, "args" jsonb not null, "tags" text[] not null default '{}', "black_icon" text null, "white_icon" text null, "color_icon" text null, "example_outputs" text[] not null default '{}', "timeout_seconds" int not null default 3600, "run_count" int not null default 0, "owner_type" text null, "owner_id" uuid null, "builtin" boolean not null default false, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "models_pkey" primary key ("id"));`);
    this.addSql(`create index "models_tags_index" on "models" using gin ("tags");`);
    this.addSql(`create index "models_created_at_id_index" on "models" ("created_at", "id");`);
    this.addSql(`create index "models_owner_type_owner_id_index" on "models" ("owner_type", "owner_id");`);

    this.addSql(`create table "model_likes" ("id" uuid not null, "model_id" uuid not null, "user_id" uuid not null, "created_at" timestamptz not null, constraint "model_likes_pkey" primary key ("id"));`);
    this.addSql(`create index "model_likes_user_id_created_at_index" on "model_likes" ("user_id", "created_at");`);
    this.addSql(`alter table "model_likes" add constraint "model_likes_model_id_user_id_unique" unique ("model_id", "user_id");`);

    this.addSql(`create table "model_follows" ("id" uuid not null, "model_id" uuid not null, "user_id" uuid not null, "created_at" timestamptz not null, constraint "model_follows_pkey" primary key ("id"));`);
    this.addSql(`create index "model_follows_user_id_created_at_index" on "model_follows" ("user_id", "created_at");`);
    this.addSql(`alter table "model_follows" add constraint "model_follows_model_id_user_id_unique" unique ("model_id", "user_id");`);

    this.addSql(`alter table "model_likes" add constraint "model_likes_model_id_foreign" foreign key ("model_id") references "models" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "model_likes" add constraint "model_likes_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "model_follows" add constraint "model_follows_model_id_foreign" foreign key ("model_id") references "models" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "model_follows" add constraint "model_follows_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "model_likes" drop constraint "model_likes_model_id_foreign";`);

    this.addSql(`alter table "model_follows" drop constraint "model_follows_model_id_foreign";`);

    this.addSql(`drop table if exists "models" cascade;`);

    this.addSql(`drop table if exists "model_likes" cascade;`);

    this.addSql(`drop table if exists "model_follows" cascade;`);
  }

}
