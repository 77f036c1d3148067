import { ArrayType, Entity, Index, PrimaryKey, Property, type Opt } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { OwnerType } from '../common/principal';
import type { WebhookEvent } from './job.webhook-events';

import type { ArgValue } from '../models/model.command';

export type { ArgValue };

export const PRIORITIES = ['low', 'normal', 'high'] as const;
export type Priority = (typeof PRIORITIES)[number];
/** A job's `priority_rank` for its deployment's priority: higher first. */
export const PRIORITY_RANKS: Readonly<Record<Priority, number>> = { low: 10, normal: 20, high: 30 };
/**
 * A batch item's rank: below its owner's normal jobs, above its low ones, so a single deployment
 * is never stuck behind its owner's batch (docs/batches.md, "Dispatch order").
 */
export const BATCH_ITEM_RANK = PRIORITY_RANKS.normal - 1;
/** The priority a job's rank belongs to (a rank between steps, a batch item's, to the one below). */
export const priorityOfRank = (rank: number): Priority =>
  rank >= 30 ? 'high' : rank >= 20 ? 'normal' : 'low';

/**
 * A model run over media with arguments. Creating one creates its job; the model is referenced
 * by id only, so deleting a catalogue entry leaves the history of its runs intact.
 */
@Entity({ tableName: 'deployments' })
@Index({ properties: ['ownerType', 'ownerId', 'createdAt', 'id'] })
export class Deployment {
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

  /** Argument name -> validated value (file arguments hold media ids). */
  @Property({ type: 'json' })
  args!: Record<string, ArgValue>;

  /** The first file argument's media id. */
  @Property({ type: 'uuid', nullable: true })
  sourceAssetId: string | null = null;

  /** The id the job's first output file takes as a media asset. */
  @Property({ type: 'uuid' })
  targetAssetId: Opt<string> = randomUUID();

  /** Where its jobs' events are POSTed (docs/webhooks.md); null: no webhook. */
  @Property({ type: 'text', nullable: true })
  webhook: string | null = null;

  /** Which events the webhook hears. */
  @Property({ type: ArrayType, default: '{}' })
  webhookEventsFilter: Opt<WebhookEvent[]> = [];

  /** Order among its owner's jobs (docs/governance.md). */
  @Property({ type: 'text', default: 'normal' })
  priority: Opt<Priority> = 'normal';

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();
}
