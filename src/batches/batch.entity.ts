import { ArrayType, Entity, Index, PrimaryKey, Property, type Opt } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { OwnerType } from '../common/principal';
import type { ArgValue } from '../jobs/deployment.entity';

/** A batch's stored state; `completed` is not stored but read from its jobs (docs/batches.md). */
export type BatchStoredStatus = 'running' | 'canceled';

/** How the items were chosen, as the request said (media ids are not repeated here). */
export type BatchInputs =
  | { arg: string; mediaIds: number }
  | { arg: string; tags: string[]; excludeTags: string[] }
  | { items: number };

/**
 * One request running a model over many inputs: each item is a deployment and its job, exactly
 * as one `createDeployment` makes, with `jobs.batch_id` set (docs/batches.md).
 */
@Entity({ tableName: 'batches' })
@Index({ properties: ['ownerType', 'ownerId', 'createdAt', 'id'] })
export class Batch {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'text' })
  ownerType!: OwnerType;

  @Property({ type: 'uuid' })
  ownerId!: string;

  @Property({ type: 'text' })
  name!: string;

  @Property({ type: 'uuid' })
  modelId!: string;

  /** The arguments common to every item (each item's own are merged over them). */
  @Property({ type: 'json' })
  args!: Record<string, ArgValue>;

  @Property({ type: 'json' })
  inputs!: BatchInputs;

  @Property({ type: 'text', default: 'running' })
  status: Opt<BatchStoredStatus> = 'running';

  /** Items (deployments) at creation; retries add jobs, never items. */
  @Property({ type: 'integer' })
  total!: number;

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();

  /** Recorded when the batch is canceled; otherwise read from its jobs. */
  @Property({ type: 'datetime', nullable: true })
  startedAt: Date | null = null;

  @Property({ type: 'datetime', nullable: true })
  finishedAt: Date | null = null;

  /** The batch's own webhook: `completed` once every job has ended (batch.webhook.ts). */
  @Property({ type: 'text', nullable: true })
  webhook: string | null = null;

  @Property({ type: ArrayType, default: '{}' })
  webhookEventsFilter: Opt<string[]> = [];

  /** When its end was first seen and its `completed` message written (once: batch.webhook.ts). */
  @Property({ type: 'datetime', nullable: true })
  completionSentAt: Date | null = null;

  /**
   * Its progress as the completion check last found it ended (BatchProgress, times as ISO text):
   * lists read it instead of the batch's jobs while none of them is unfinished (batch.store.ts).
   */
  @Property({ type: 'json', nullable: true })
  finalProgress: Record<string, unknown> | null = null;
}
