import { GraphQLJSONObject } from 'graphql-scalars';
import { Field, Float, ID, InputType, Int, ObjectType, registerEnumType } from 'type-graphql';
import { Connection } from '../graphql/graphql.helpers';
import { WebhookEventEnum } from '../jobs/deployment.types';
import type { BatchCounts } from './batch.store';
import type { BatchView } from './batch.service';

export enum BatchStatusEnum {
  RUNNING = 'running',
  COMPLETED = 'completed',
  CANCELED = 'canceled',
}
registerEnumType(BatchStatusEnum, {
  name: 'BatchStatus',
  description: 'RUNNING until every job has ended (COMPLETED), or CANCELED by its owner.',
});

@ObjectType('BatchCounts', { description: "A batch's items by the state of their latest job." })
export class BatchCountsType implements BatchCounts {
  @Field(() => Int) queued!: number;
  @Field(() => Int) starting!: number;
  @Field(() => Int) running!: number;
  @Field(() => Int) succeeded!: number;
  @Field(() => Int) failed!: number;
  @Field(() => Int) canceled!: number;
}

@ObjectType('Batch', {
  description: 'A model run over many inputs in one request: each item a deployment and its job.',
})
export class BatchType {
  @Field(() => ID)
  id!: string;

  @Field(() => String)
  name!: string;

  @Field(() => ID)
  modelId!: string;

  @Field(() => GraphQLJSONObject, { description: 'The arguments common to every item.' })
  args!: Record<string, unknown>;

  @Field(() => BatchStatusEnum)
  status!: BatchStatusEnum;

  @Field(() => Int, { description: 'Its items (deployments).' })
  total!: number;

  @Field(() => BatchCountsType)
  counts!: BatchCountsType;

  @Field(() => Date)
  createdAt!: Date;

  @Field(() => Date, { nullable: true, description: 'When its first job started.' })
  startedAt!: Date | null;

  @Field(() => Date, {
    nullable: true,
    description: 'When it completed (its last job ended) or was canceled.',
  })
  finishedAt!: Date | null;

  @Field(() => Float, { description: 'Run time of all its jobs, retries included, in seconds.' })
  runSeconds!: number;

  @Field(() => String, { nullable: true })
  webhook!: string | null;

  @Field(() => [WebhookEventEnum])
  webhookEventsFilter!: WebhookEventEnum[];

  static from(v: BatchView): BatchType {
    const b = v.batch;
    return {
      id: b.id,
      name: b.name,
      modelId: b.modelId,
      args: b.args,
      status: v.status as BatchStatusEnum,
      total: b.total,
      counts: v.counts,
      createdAt: b.createdAt,
      startedAt: v.startedAt,
      finishedAt: v.finishedAt,
      runSeconds: v.runSeconds,
      webhook: b.webhook,
      webhookEventsFilter: b.webhookEventsFilter as WebhookEventEnum[],
    } satisfies BatchType;
  }
}

export const BatchConnection = Connection(BatchType, 'Batch');

@InputType({ description: 'Exactly one of mediaIds, tags (with excludeTags) or items.' })
export class BatchInputsInput {
  @Field(() => String, {
    nullable: true,
    description: 'The file argument each selected media asset goes to.',
  })
  arg?: string | null;

  @Field(() => [ID], { nullable: true, description: 'One item per media asset of yours.' })
  mediaIds?: string[] | null;

  @Field(() => [String], {
    nullable: true,
    description: 'One item per live media asset of yours with any of these tags (as the media list filters).',
  })
  tags?: string[] | null;

  @Field(() => [String], { nullable: true, description: 'Leaves out media with any of these tags.' })
  excludeTags?: string[] | null;

  @Field(() => [GraphQLJSONObject], {
    nullable: true,
    description: "One item per object: its arguments, merged over the batch's args.",
  })
  items?: Record<string, unknown>[] | null;
}

@InputType()
export class CreateBatchInput {
  @Field(() => String)
  name!: string;

  @Field(() => ID)
  modelId!: string;

  @Field(() => ID, {
    nullable: true,
    description: 'The model version every item runs; the latest when left out.',
  })
  versionId?: string | null;

  @Field(() => GraphQLJSONObject, { nullable: true, description: 'Arguments common to every item.' })
  args?: Record<string, unknown> | null;

  @Field(() => BatchInputsInput)
  inputs!: BatchInputsInput;

  @Field(() => String, { nullable: true, description: "The batch's webhook (its events come later)." })
  webhook?: string | null;

  @Field(() => [WebhookEventEnum], { nullable: true })
  webhookEventsFilter?: WebhookEventEnum[] | null;
}
