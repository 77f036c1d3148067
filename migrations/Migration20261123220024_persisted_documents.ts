import { Migration } from '@mikro-orm/migrations';

export class Migration20261123220024_persisted_documents extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "graphql_documents" ("key" text not null, "document" text not null, "used_at" timestamptz not null, constraint "graphql_documents_pkey" primary key ("key"));`);
    this.addSql(`create index "graphql_documents_used_at_index" on "graphql_documents" ("used_at");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "graphql_documents" cascade;`);
  }

}
