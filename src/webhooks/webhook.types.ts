import { Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { Connection } from '../graphql/graphql.helpers';
import { WebhookEventEnum } from '../jobs/deployment.types';
import type { WebhookAttempt, WebhookDelivery, WebhookSecret } from './webhook.entity';

export enum WebhookDeliveryStatusEnum {
  PENDING = 'pending',
  DELIVERED = 'delivered',
  FAILED = 'failed',
}
registerEnumType(WebhookDeliveryStatusEnum, { name: 'WebhookDeliveryStatus' });

export enum WebhookAttemptOutcomeEnum {
  DELIVERED = 'delivered',
  RETRY = 'retry',
  FAILED = 'failed',
  INTERRUPTED = 'interrupted',
}
registerEnumType(WebhookAttemptOutcomeEnum, {
  name: 'WebhookAttemptOutcome',
  description:
    'RETRY: failed, tried again later; FAILED: failed for good; INTERRUPTED: the worker stopped during it.',
});

@ObjectType('WebhookSecret', { description: 'The key that signs your webhook messages (Standard Webhooks).' })
export class WebhookSecretType {
  @Field(() => String, { description: '`whsec_` and the base64 key.' })
  key!: string;

  @Field(() => Date, { nullable: true, description: 'Since then; the previous key signs too for 24 hours.' })
  rotatedAt!: Date | null;

  static from(s: WebhookSecret): WebhookSecretType {
    return Object.assign(new WebhookSecretType(), { key: s.key, rotatedAt: s.rotatedAt });
  }
}

@ObjectType('WebhookAttempt', { description: 'One attempt at a webhook message.' })
export class WebhookAttemptType {
  @Field(() => Int)
  attempt!: number;

  @Field(() => Date)
  startedAt!: Date;

  @Field(() => Int, { nullable: true })
  durationMs!: number | null;

  @Field(() => Int, {
    nullable: true,
    description: "The receiver's status code; null when there was no answer.",
  })
  responseCode!: number | null;

  @Field(() => WebhookAttemptOutcomeEnum)
  outcome!: WebhookAttemptOutcomeEnum;

  @Field(() => String, { nullable: true })
  error!: string | null;

  @Field(() => String, {
    nullable: true,
    description: "The start of the receiver's answer (at most 4 KiB are read, 512 characters kept).",
  })
  response!: string | null;

  static from(a: WebhookAttempt): WebhookAttemptType {
    return Object.assign(new WebhookAttemptType(), {
      attempt: a.attempt,
      startedAt: a.startedAt,
      durationMs: a.durationMs,
      responseCode: a.responseCode,
      outcome: a.outcome as WebhookAttemptOutcomeEnum,
      error: a.error,
      response: a.response,
    });
  }
}

@ObjectType('WebhookDelivery', {
  description: "A message to a deployment's webhook about one event of a job.",
})
export class WebhookDeliveryType {
  @Field(() => ID, { description: 'The `webhook-id` of every attempt.' })
  id!: string;

  @Field(() => ID)
  jobId!: string;

  @Field(() => WebhookEventEnum)
  event!: WebhookEventEnum;

  @Field(() => String)
  url!: string;

  @Field(() => WebhookDeliveryStatusEnum)
  status!: WebhookDeliveryStatusEnum;

  @Field(() => Date)
  createdAt!: Date;

  @Field(() => Date, { nullable: true })
  deliveredAt!: Date | null;

  @Field(() => Date, { nullable: true, description: 'When the next attempt is due, while it is pending.' })
  nextAttemptAt!: Date | null;

  static from(d: WebhookDelivery): WebhookDeliveryType {
    return Object.assign(new WebhookDeliveryType(), {
      id: d.id,
      // Listed by job only: a batch's own messages are not among them.
      jobId: d.job!.id,
      event: d.event as WebhookEventEnum,
      url: d.url,
      status: d.status as WebhookDeliveryStatusEnum,
      createdAt: d.createdAt,
      deliveredAt: d.deliveredAt,
      nextAttemptAt: d.nextAttemptAt,
    });
  }
}

export const WebhookDeliveryConnection = Connection(WebhookDeliveryType, 'WebhookDelivery');
