import { ArrayType, Entity, Index, ManyToOne, PrimaryKey, Property, Unique, type Opt } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { OwnerType } from '../common/principal';
import { User } from '../users/user.entity';

export type ModelArgumentKind = 'int' | 'float' | 'string' | 'file' | 'array';

/** `public`: every principal reads it; `private`: its owner and the teams it is shared with. */
export type ModelVisibility = 'public' | 'private';

/** One argument a deployment passes to the model's command; stored in the model's `args` list. */
export interface ModelArgument {
  name: string;
  type: ModelArgumentKind;
  /** Contains `:value`, where the deployment's value goes (`--width=:value`). */
  format: string;
  description: string | null;
  example: string | null;
  optional: boolean;
  /** Null when the definition gave none (the legacy answers show `null`). */
  tags: string[] | null;
  min: number | null;
  max: number | null;
  /** The values a string argument may take (a select in the web app); null: any string. Absent in older rows. */
  choices?: string[] | null;
}

/**
 * A catalogue entry: a container and a command template that deployments run. Everybody reads
 * public models, a private one only its owner and the teams it is shared with; only the owner
 * changes a model. Built-in models have no owner and are read-only. What runs is also kept, per
 * change, as an immutable ModelVersion.
 */
@Entity({ tableName: 'models' })
@Index({ name: 'models_owner_created_at_index', properties: ['ownerType', 'ownerId', 'createdAt', 'id'] })
@Index({ properties: ['createdAt', 'id'] })
export class Model {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'text' })
  name!: string;

  @Property({ type: 'text' })
  version: Opt<string> = '';

  @Property({ type: 'text', nullable: true })
  description: string | null = null;

  @Property({ type: 'text' })
  container!: string;

  @Property({ type: 'text' })
  command: Opt<string> = '{args}';

  @Property({ type: 'text' })
  machineType: Opt<string> = 'cpu';

  @Property({ type: 'integer' })
  machineCount: Opt<number> = 1;

  @Property({ type: 'json' })
  args!: ModelArgument[];

  @Property({ type: ArrayType, default: '{}' })
  tags: Opt<string[]> = [];

  @Property({ type: 'text', nullable: true })
  blackIcon: string | null = null;

  @Property({ type: 'text', nullable: true })
  whiteIcon: string | null = null;

  @Property({ type: 'text', nullable: true })
  colorIcon: string | null = null;

  @Property({ type: ArrayType, default: '{}' })
  exampleOutputs: Opt<string[]> = [];

  /** Per-job time limit the executors enforce. */
  @Property({ type: 'integer', default: 3600 })
  timeoutSeconds: Opt<number> = 3600;

  /** Automatic retries of a job that failed because of the infrastructure (never of a program's own failure). */
  @Property({ type: 'integer', default: 0 })
  maxRetries: Opt<number> = 0;

  /** Deployments of this model; creating one increments it (`runCountPart`). */
  @Property({ type: 'integer', default: 0 })
  runCount: Opt<number> = 0;

  /** Null only for built-in models, which belong to the service. */
  @Property({ type: 'text', nullable: true })
  ownerType: OwnerType | null = null;

  @Property({ type: 'uuid', nullable: true })
  ownerId: string | null = null;

  @Property({ type: 'boolean', default: false })
  builtin: Opt<boolean> = false;

  @Property({ type: 'text', default: 'public' })
  visibility: Opt<ModelVisibility> = 'public';

  /** Teams that see and run a private model (never change it). */
  @Property({ type: ArrayType, default: '{}' })
  sharedWith: Opt<string[]> = [];

  /** Names of the owner's secrets a job of this model gets (secrets module). */
  @Property({ type: ArrayType, default: '{}' })
  secrets: Opt<string[]> = [];

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime', onUpdate: () => new Date() })
  updatedAt: Opt<Date> = new Date();
}

/**
 * What one version of a model runs, as it was when it was made: written when a model is created
 * and whenever a change alters what runs, never changed afterwards, and kept when the model is
 * deleted (jobs refer to it). `sequence` counts a model's versions from 1.
 */
@Entity({ tableName: 'model_versions' })
@Unique({ properties: ['modelId', 'sequence'] })
export class ModelVersion {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  /** Not a foreign key: the version outlives its model. */
  @Property({ type: 'uuid' })
  modelId!: string;

  @Property({ type: 'integer' })
  sequence!: number;

  @Property({ type: 'text' })
  container!: string;

  @Property({ type: 'text' })
  command!: string;

  @Property({ type: 'text' })
  machineType!: string;

  @Property({ type: 'integer' })
  machineCount!: number;

  @Property({ type: 'integer' })
  timeoutSeconds!: number;

  @Property({ type: 'json' })
  args!: ModelArgument[];

  @Property({ type: ArrayType })
  secrets!: string[];

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();
}

/** A user's like or follow of a model: at most one of each per user and model. */
@Entity({ abstract: true })
export abstract class ModelReaction {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Model, { deleteRule: 'cascade' })
  model!: Model;

  @ManyToOne(() => User, { deleteRule: 'cascade' })
  user!: User;

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();
}

@Entity({ tableName: 'model_likes' })
@Unique({ properties: ['model', 'user'] })
@Index({ properties: ['user', 'createdAt'] })
export class ModelLike extends ModelReaction {}

@Entity({ tableName: 'model_follows' })
@Unique({ properties: ['model', 'user'] })
@Index({ properties: ['user', 'createdAt'] })
export class ModelFollow extends ModelReaction {}
