import { Migration } from '@mikro-orm/migrations';

export class Migration20261127120100_batch_final_progress extends Migration {

  override async up(): Promise<void> {
    // An ended batch's progress, kept by its completion check for lists (batch.store.ts). Batches
    // ended before this have none: lists read their jobs, as before.
    this.addSql(`alter table "batches" add column "final_progress" jsonb null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "batches" drop column "final_progress";`);
  }

}
