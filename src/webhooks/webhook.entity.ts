import { Entity, Index, ManyToOne, PrimaryKey, Property, Unique, type Opt } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { OwnerType } from '../common/principal';
import { Job } from '../jobs/job.entity';
import type { WebhookEvent } from '../jobs/job.webhook-events';

/** An owner's signing secret (`whsec_...`); after a rotation the previous one signs too for a day. */
@Entity({ tableName: 'webhook_secrets' })
@Unique({ properties: ['ownerType', 'ownerId'] })
export class WebhookSecret {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'text' })
  ownerType!: OwnerType;

  @Property({ type: 'uuid' })
  ownerId!: string;

  @Property({ type: 'text' })
  key!: string;

  @Property({ type: 'text', nullable: true })
  previousKey: string | null = null;

  @Property({ type: 'datetime', nullable: true })
  rotatedAt: Date | null = null;

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/**
 * One message to a deployment's webhook about one event of one of its jobs (or to a batch's about its end). Its id is the
 * `webhook-id` of every attempt; its body is fixed by the first attempt.
 */
@Entity({ tableName: 'webhook_deliveries' })
@Index({ name: 'webhook_deliveries_job_created_at_id_index', properties: ['job', 'createdAt', 'id'] })
export class WebhookDelivery {
  /** `msg_` and 32 hex digits. */
  @PrimaryKey({ type: 'text' })
  id!: string;

  /** Null for a message about no job: a batch's own (`batch`), a budget's `budget.threshold`; their body is written with them. */
  @ManyToOne(() => Job, { deleteRule: 'cascade', nullable: true })
  job!: Job | null;

  /** The batch a batch's `completed` message is about (src/batches/batch.webhook.ts). */
  @ManyToOne({ entity: 'Batch', nullable: true, mapToPk: true, deleteRule: 'cascade' })
  @Index({
    name: 'webhook_deliveries_batch_id_index',
    expression: `create index "webhook_deliveries_batch_id_index" on "webhook_deliveries" ("batch_id") where "batch_id" is not null`,
  })
  batch: string | null = null;

  @Property({ type: 'text' })
  ownerType!: OwnerType;

  @Property({ type: 'uuid' })
  ownerId!: string;

  @Property({ type: 'text' })
  event!: WebhookEvent | 'budget.threshold';

  @Property({ type: 'text' })
  url!: string;

  @Property({ type: 'text' })
  status: Opt<DeliveryStatus> = 'pending';

  /** Attempts started (the last one may still be under way). */
  @Property({ type: 'integer', default: 0 })
  attempts: Opt<number> = 0;

  /** The JSON sent, as the first attempt rendered it. */
  @Property({ type: 'text', nullable: true })
  body: string | null = null;

  @Property({ type: 'datetime', nullable: true })
  attemptStartedAt: Date | null = null;

  @Property({ type: 'datetime', nullable: true })
  nextAttemptAt: Date | null = null;

  @Property({ type: 'datetime', nullable: true })
  deliveredAt: Date | null = null;

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();
}

export type AttemptOutcomeKind = 'delivered' | 'retry' | 'failed' | 'interrupted';

/** One attempt at a delivery: what happened and how long it took. */
@Entity({ tableName: 'webhook_attempts' })
@Unique({ properties: ['delivery', 'attempt'] })
export class WebhookAttempt {
  @PrimaryKey({ type: 'bigint', autoincrement: true })
  id!: string;

  @ManyToOne(() => WebhookDelivery, { deleteRule: 'cascade' })
  delivery!: WebhookDelivery;

  @Property({ type: 'integer' })
  attempt!: number;

  @Property({ type: 'datetime' })
  startedAt!: Date;

  @Property({ type: 'integer', nullable: true })
  durationMs: number | null = null;

  @Property({ type: 'integer', nullable: true })
  responseCode: number | null = null;

  /** `retry`: failed and tried again later; `failed`: failed for good; `interrupted`: the worker stopped. */
  @Property({ type: 'text' })
  outcome!: AttemptOutcomeKind;

  @Property({ type: 'text', nullable: true })
  error: string | null = null;

  /** The start of the receiver's answer. */
  @Property({ type: 'text', nullable: true })
  response: string | null = null;
}
