import { Field, Float, ID, InputType, Int, ObjectType } from 'type-graphql';
import type { OwnerType, Principal } from '../common/principal';
import { Connection } from '../graphql/graphql.helpers';
import type { Model, ModelArgument, ModelVersion, ModelVisibility } from './model.entity';
import { maySee } from './model.service';
import { classificationOf } from './model.validation';

@ObjectType('ModelArgument', { description: 'One argument a deployment of the model passes.' })
export class ModelArgumentType {
  @Field(() => String, { description: 'Unique within the model.' })
  name!: string;

  @Field(() => String, { description: 'int, float, string, file (a media id) or array.' })
  type!: string;

  @Field(() => String, { description: 'How the value is passed; `:value` is replaced by it.' })
  format!: string;

  @Field(() => String, { nullable: true })
  description!: string | null;

  @Field(() => String, { nullable: true })
  example!: string | null;

  @Field(() => Boolean)
  optional!: boolean;

  @Field(() => [String], { nullable: true })
  tags!: string[] | null;

  @Field(() => Float, { nullable: true, description: 'Lower bound (int and float only).' })
  min!: number | null;

  @Field(() => Float, { nullable: true, description: 'Upper bound (int and float only).' })
  max!: number | null;

  @Field(() => [String], {
    nullable: true,
    description: 'The values a string argument may take; null when any string goes.',
  })
  choices?: string[] | null;
}

@ObjectType('Model', { description: 'A catalogue entry: a container and the command deployments run in it.' })
export class ModelType {
  @Field(() => ID)
  id!: string;

  @Field(() => String)
  name!: string;

  @Field(() => String)
  version!: string;

  @Field(() => String, { nullable: true })
  description!: string | null;

  @Field(() => String, { description: 'The container the cluster manager runs.' })
  container!: string;

  @Field(() => String, { description: 'Command template; `{args}` is replaced by the formatted arguments.' })
  command!: string;

  @Field(() => String)
  machineType!: string;

  @Field(() => Int)
  machineCount!: number;

  @Field(() => Int, { description: 'Per-job time limit.' })
  timeoutSeconds!: number;

  @Field(() => Int, {
    description:
      'Automatic retries of a job that failed because of the infrastructure (worker lost, node failure, preemption).',
  })
  maxRetries!: number;

  @Field(() => [ModelArgumentType])
  args!: ModelArgument[];

  @Field(() => [String])
  tags!: string[];

  @Field(() => String, { nullable: true })
  blackIcon!: string | null;

  @Field(() => String, { nullable: true })
  whiteIcon!: string | null;

  @Field(() => String, { nullable: true })
  colorIcon!: string | null;

  @Field(() => [String])
  exampleOutputs!: string[];

  @Field(() => String, { description: 'Set by the service from the machine type.' })
  classification!: string;

  @Field(() => Int, { description: 'How many deployments the model has had.' })
  runCount!: number;

  @Field(() => Boolean, { description: 'Shipped with the service; read-only.' })
  builtin!: boolean;

  @Field(() => String, {
    description: '`public`: every principal sees it; `private`: its owner and the teams it is shared with.',
  })
  visibility!: ModelVisibility;

  @Field(() => [String], {
    description: "Names of the owner's secrets each job of the model gets (docs/secrets.md).",
  })
  secrets!: string[];

  @Field(() => Date)
  createdAt!: Date;

  @Field(() => Date)
  updatedAt!: Date;

  /** Not fields: the resolver uses them to answer `viewerCanEdit` and `sharedWith` (editors only). */
  ownerType!: OwnerType | null;
  ownerId!: string | null;
  sharedWith!: string[];

  /** The Model properties the given fields are made of (a field not named so: a property of its name). */
  static propsOf(fields: Iterable<string>): string[] {
    const props = [...fields].flatMap((f) =>
      f === '__typename' ? [] : f === 'classification' ? ['machineType'] : [f],
    );
    // Whether the viewer may see the model at all is decided on these (seenBy).
    return props.length ? [...props, 'visibility', 'ownerType', 'ownerId', 'sharedWith', 'builtin'] : props;
  }

  /**
   * The model as the principal may see it, or null: a job or deployment names its model by id,
   * and a model since made private (or no longer shared) must not show through it.
   */
  static seenBy(principal: Principal, m: Model | null | undefined): ModelType | null {
    return m && maySee(principal, m) ? ModelType.from(m) : null;
  }

  static from(m: Model): ModelType {
    return {
      id: m.id,
      name: m.name,
      version: m.version,
      description: m.description,
      container: m.container,
      command: m.command,
      machineType: m.machineType,
      machineCount: m.machineCount,
      timeoutSeconds: m.timeoutSeconds,
      maxRetries: m.maxRetries,
      args: m.args,
      tags: m.tags,
      blackIcon: m.blackIcon,
      whiteIcon: m.whiteIcon,
      colorIcon: m.colorIcon,
      exampleOutputs: m.exampleOutputs,
      classification: classificationOf(m.machineType),
      runCount: m.runCount,
      builtin: m.builtin,
      visibility: m.visibility,
      secrets: m.secrets,
      sharedWith: m.sharedWith,
      createdAt: m.createdAt,
      updatedAt: m.updatedAt,
      ownerType: m.ownerType,
      ownerId: m.ownerId,
    } satisfies ModelType;
  }
}

export const ModelConnection = Connection(ModelType, 'Model');

@ObjectType('ModelVersion', {
  description:
    'What one version of a model runs, as it was made: immutable, and kept after the model is deleted for the jobs that ran it.',
})
export class ModelVersionType {
  @Field(() => ID)
  id!: string;

  @Field(() => ID)
  modelId!: string;

  @Field(() => Int, { description: "1 for the model's first version, then one more per version." })
  sequence!: number;

  @Field(() => String)
  container!: string;

  @Field(() => String)
  command!: string;

  @Field(() => String)
  machineType!: string;

  @Field(() => Int)
  machineCount!: number;

  @Field(() => Int)
  timeoutSeconds!: number;

  @Field(() => [ModelArgumentType])
  args!: ModelArgument[];

  @Field(() => [String], { description: 'Names of the secrets its jobs get.' })
  secrets!: string[];

  @Field(() => Date)
  createdAt!: Date;

  static from(v: ModelVersion): ModelVersionType {
    return {
      id: v.id,
      modelId: v.modelId,
      sequence: v.sequence,
      container: v.container,
      command: v.command,
      machineType: v.machineType,
      machineCount: v.machineCount,
      timeoutSeconds: v.timeoutSeconds,
      args: v.args,
      secrets: v.secrets,
      createdAt: v.createdAt,
    } satisfies ModelVersionType;
  }
}

export const ModelVersionConnection = Connection(ModelVersionType, 'ModelVersion');

@InputType()
export class ModelArgumentInput {
  @Field(() => String)
  name!: string;

  @Field(() => String, { description: 'int, float, string, file or array.' })
  type!: string;

  @Field(() => String, { description: 'Must contain `:value`.' })
  format!: string;

  @Field(() => String, { nullable: true })
  description?: string | null;

  @Field(() => String, { nullable: true })
  example?: string | null;

  @Field(() => Boolean, { nullable: true, description: 'Defaults to false.' })
  optional?: boolean | null;

  @Field(() => [String], { nullable: true })
  tags?: string[] | null;

  @Field(() => Float, { nullable: true })
  min?: number | null;

  @Field(() => Float, { nullable: true })
  max?: number | null;

  @Field(() => [String], { nullable: true, description: 'String arguments only: the values allowed.' })
  choices?: string[] | null;
}

/** The definable fields; on update an absent field is kept and null resets it to its default. */
@InputType() // registered so its fields are inherited; never referenced, so not in the schema
abstract class ModelDefinitionFields {
  @Field(() => String, { nullable: true })
  version?: string | null;

  @Field(() => String, { nullable: true })
  description?: string | null;

  @Field(() => String, { nullable: true, description: 'Must contain `{args}` once. Default `{args}`.' })
  command?: string | null;

  @Field(() => String, { nullable: true, description: 'Default `cpu`.' })
  machineType?: string | null;

  @Field(() => Int, { nullable: true, description: 'Default 1.' })
  machineCount?: number | null;

  @Field(() => Int, { nullable: true, description: 'Seconds, 1 to 86400. Default 3600.' })
  timeoutSeconds?: number | null;

  @Field(() => Int, { nullable: true, description: '0 to 10. Default 0.' })
  maxRetries?: number | null;

  @Field(() => [String], { nullable: true })
  tags?: string[] | null;

  @Field(() => String, { nullable: true })
  blackIcon?: string | null;

  @Field(() => String, { nullable: true })
  whiteIcon?: string | null;

  @Field(() => String, { nullable: true })
  colorIcon?: string | null;

  @Field(() => [String], { nullable: true })
  exampleOutputs?: string[] | null;

  @Field(() => String, { nullable: true, description: '`public` (default) or `private`.' })
  visibility?: string | null;

  @Field(() => [ID], {
    nullable: true,
    description: 'Teams that see and run the model while it is private (never change it).',
  })
  sharedWith?: string[] | null;

  @Field(() => [String], {
    nullable: true,
    description: "Names of the owner's secrets each job gets, as environment variable names.",
  })
  secrets?: string[] | null;
}

@InputType()
export class CreateModelInput extends ModelDefinitionFields {
  @Field(() => ID, { nullable: true, description: 'A UUID of your choice; random when absent.' })
  id?: string | null;

  @Field(() => String)
  name!: string;

  @Field(() => String)
  container!: string;

  @Field(() => [ModelArgumentInput])
  args!: ModelArgumentInput[];
}

@InputType()
export class UpdateModelInput extends ModelDefinitionFields {
  @Field(() => String, { nullable: true })
  name?: string | null;

  @Field(() => String, { nullable: true })
  container?: string | null;

  @Field(() => [ModelArgumentInput], { nullable: true, description: 'Replaces all arguments.' })
  args?: ModelArgumentInput[] | null;
}

@InputType()
export class ModelFilterInput {
  @Field(() => [String], { nullable: true, description: 'Models carrying any of these tags.' })
  tags?: string[] | null;

  @Field(() => Boolean, { nullable: true, description: "Only the viewer's own models." })
  mine?: boolean | null;
}
