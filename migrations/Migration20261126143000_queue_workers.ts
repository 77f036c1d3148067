import { Migration } from '@mikro-orm/migrations';

export class Migration20261126143000_queue_workers extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "worker_instances" add column "queue_workers" text[] not null default '{}';`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "worker_instances" drop column "queue_workers";`);
  }

}
