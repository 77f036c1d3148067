import { ArrayType, Entity, Index, PrimaryKey, Property, type Opt } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { OwnerType } from '../common/principal';
import type { WebhookEvent } from '../webhooks/webhook.events';

import type { ArgValue } from '../models/model.command';

export type { ArgValue };

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

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();
}
