import { GraphQLJSONObject } from 'graphql-scalars';
import { Field, ID, InputType, ObjectType, registerEnumType } from 'type-graphql';
import { Connection } from '../graphql/graphql.helpers';
import type { ArgValue, Deployment } from './deployment.entity';

/** What a deployment's webhook hears (WEBHOOK_EVENTS), as the schema names them. */
export enum WebhookEventEnum {
  START = 'start',
  OUTPUT = 'output',
  LOGS = 'logs',
  COMPLETED = 'completed',
}
registerEnumType(WebhookEventEnum, {
  name: 'WebhookEvent',
  description:
    'START: the job runs; OUTPUT: it produced its outputs; LOGS: it printed lines (at most every 500 ms); COMPLETED: it ended.',
});

/** A deployment's priority (docs/governance.md). */
export enum PriorityEnum {
  LOW = 'low',
  NORMAL = 'normal',
  HIGH = 'high',
}
registerEnumType(PriorityEnum, {
  name: 'Priority',
  description:
    "Order among the owner's own jobs (higher first, then age); across owners fair share decides. HIGH for a team needs admin or owner.",
});

@ObjectType('Deployment', { description: 'A model run over media with arguments; it has one job.' })
export class DeploymentType {
  @Field(() => ID)
  id!: string;

  @Field(() => String)
  name!: string;

  @Field(() => ID)
  modelId!: string;

  @Field(() => GraphQLJSONObject, { description: 'Argument values as validated (files as media ids).' })
  args!: Record<string, ArgValue>;

  @Field(() => ID, { nullable: true, description: 'The first file argument.' })
  sourceAssetId!: string | null;

  @Field(() => ID, { description: "The id the job's first output file takes." })
  targetAssetId!: string;

  @Field(() => String, { nullable: true, description: "Where its jobs' events are POSTed." })
  webhook!: string | null;

  @Field(() => [WebhookEventEnum], { description: 'Which events the webhook hears.' })
  webhookEventsFilter!: WebhookEventEnum[];

  @Field(() => PriorityEnum)
  priority!: PriorityEnum;

  @Field(() => Date)
  createdAt!: Date;

  /** The Deployment properties the given fields are made of: those of the same name. */
  static propsOf(fields: Iterable<string>): string[] {
    return [...fields].filter((f) => f !== '__typename');
  }

  static from(d: Deployment): DeploymentType {
    return {
      id: d.id,
      name: d.name,
      modelId: d.modelId,
      args: d.args,
      sourceAssetId: d.sourceAssetId,
      targetAssetId: d.targetAssetId,
      webhook: d.webhook,
      webhookEventsFilter: d.webhookEventsFilter as WebhookEventEnum[],
      priority: d.priority as PriorityEnum,
      createdAt: d.createdAt,
    } satisfies DeploymentType;
  }
}

export const DeploymentConnection = Connection(DeploymentType, 'Deployment');

@InputType()
export class CreateDeploymentInput {
  @Field(() => String)
  name!: string;

  @Field(() => ID)
  modelId!: string;

  @Field(() => ID, {
    nullable: true,
    description: "The model's version to run (400 for another model's); default: its latest.",
  })
  versionId?: string | null;

  @Field(() => GraphQLJSONObject, {
    nullable: true,
    description: 'Argument name -> value (int, float, string, or a media id for a file argument).',
  })
  args?: Record<string, unknown> | null;

  @Field(() => String, {
    nullable: true,
    description:
      'Cancel the job if it has not ended after this duration, queue time included (30s, 5m, 1h30m).',
  })
  cancelAfter?: string | null;

  @Field(() => String, {
    nullable: true,
    description: 'An https URL to POST its jobs to as events happen, signed (docs/webhooks.md).',
  })
  webhook?: string | null;

  @Field(() => [WebhookEventEnum], { nullable: true, description: 'Default: COMPLETED only.' })
  webhookEventsFilter?: WebhookEventEnum[] | null;

  @Field(() => PriorityEnum, { nullable: true, description: 'Default: NORMAL.' })
  priority?: PriorityEnum | null;
}
