import { randomUUID } from 'node:crypto';
import {
  ForeignKeyConstraintViolationException,
  UniqueConstraintViolationException,
  raw,
} from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { isOwnedBy, ownedBy, type OwnerType, type Principal } from '../auth/principal';
import type { AuditLog } from '../teams/audit.service';
import { authorize, roleAllows } from '../teams/team.roles';
import { AppError } from '../common/errors';
import type { MachineTypes } from '../common/machine-types';
import { isUuid } from '../common/ids';
import { findPage, type Page, type PageArgs } from '../common/pagination';
import { normaliseTags } from '../common/tags';
import { readByIds, rowReader, textArray } from '../db/rows';
import { sqlPage } from '../db/sql-page';
import { Model, ModelFollow, ModelLike, type ModelReaction } from './model.entity';
import { checkDefinition, type ModelDefinitionInput } from './model.validation';

export type ReactionKind = 'like' | 'follow';

export interface ModelFilter {
  /** Models carrying any of these tags. */
  tags?: string[] | null;
  /** Only the principal's own models. */
  mine?: boolean | null;
}

/** How many users reacted to a model, and whether the viewer is one of them. */
export interface ReactionStats {
  count: number;
  viewer: boolean;
}

const reactionEntity = (kind: ReactionKind) => (kind === 'like' ? ModelLike : ModelFollow);

/** Who may change a model: its owner only. Built-in models belong to the service. */
export function mayChange(principal: Principal, model: Pick<Model, 'builtin' | 'ownerType' | 'ownerId'>) {
  if (model.builtin || !model.ownerType || !model.ownerId) return false;
  // A team's models are changed by its admins and owners (the role matrix, src/teams/team.roles.ts).
  const role = principal.teamRole ?? 'viewer';
  return (
    isOwnedBy({ ownerType: model.ownerType, ownerId: model.ownerId }, principal) &&
    (!principal.team || roleAllows(role, 'manage'))
  );
}

/** Counts one deployment of a model on its own (tests; deployments compose RUN_COUNT_INCREMENT). */
export async function incrementRunCount(em: EntityManager, modelId: string): Promise<void> {
  await em.execute(RUN_COUNT_INCREMENT, [modelId]);
}

/**
 * The statement that counts one deployment (one `?`: the model id). The deployments module runs it
 * inside the statement that creates the deployment, so the count and the deployment commit together.
 */
export const RUN_COUNT_INCREMENT = 'update models set run_count = run_count + 1 where id = ?';

/** The model catalogue: every principal reads it; only a model's owner changes it. */
export class ModelService {
  constructor(
    private readonly orm: MikroORM,
    /** MACHINE_TYPES_FILE's machine types, which models must name; null: any name. */
    private readonly machineTypes: MachineTypes | null = null,
    /** Team changes leave audit records (none in scripts). */
    private readonly audit: AuditLog | null = null,
  ) {}

  async create(principal: Principal, input: ModelDefinitionInput & { id?: string | null }): Promise<Model> {
    authorize(principal, 'write', 'create models');
    if (input.id !== undefined && input.id !== null && !isUuid(input.id))
      throw AppError.validation({ id: 'must be a UUID' });
    const definition = checkDefinition(input, undefined, { machineTypes: this.machineTypes });
    const em = this.orm.em.fork();
    const model = em.create(Model, {
      ...definition,
      ...(input.id ? { id: input.id.toLowerCase() } : {}),
      ...ownedBy(principal),
    });
    this.audit?.recordForTeam(em, principal, {
      action: 'model.created',
      targetType: 'model',
      targetId: model.id,
    });
    try {
      await em.flush();
    } catch (err) {
      if (err instanceof UniqueConstraintViolationException)
        throw new AppError('CONFLICT', 'a model with this id exists already');
      throw err;
    }
    return model;
  }

  /**
   * Any model by id, or 404, as a plain read-only row: the deployments module reads one per
   * deployment, and the ORM's hydration cost more than the query.
   */
  async get(_principal: Principal, id: string): Promise<Model> {
    const [model] = await readByIds(this.orm, Model, [id.toLowerCase()]);
    if (!model) throw AppError.notFound('model');
    return model;
  }

  /** Models by id (for DataLoaders), as plain read-only rows; deleted ones are simply absent. */
  async byIds(ids: readonly string[]): Promise<Model[]> {
    return readByIds(this.orm, Model, ids);
  }

  /**
   * The catalogue (or the principal's own models), newest first, as plain read-only rows. The
   * tag filter is checked per row within the scan budget: a GIN index finds tagged models but not
   * in the list's order, so a common tag read every tagged model per page.
   */
  async list(principal: Principal, filter: ModelFilter, args: PageArgs): Promise<Page<Model>> {
    const tags = normaliseTags(filter.tags);
    const owner = filter.mine ? ownedBy(principal) : null;
    return sqlPage(
      this.orm.em,
      'models',
      {
        where: owner
          ? [
              ['owner_type = ?', owner.ownerType],
              ['owner_id = ?', owner.ownerId],
            ]
          : [],
        filter: tags.length ? [['tags && ?::text[]', textArray(tags)]] : [],
      },
      args,
      rowReader(this.orm, Model),
    );
  }

  async update(principal: Principal, id: string, input: ModelDefinitionInput): Promise<Model> {
    const em = this.orm.em.fork();
    const model = this.assertChangeable(principal, await this.find(em, id));
    em.assign(model, checkDefinition(input, model, { machineTypes: this.machineTypes }));
    this.audit?.recordForTeam(em, principal, {
      action: 'model.updated',
      targetType: 'model',
      targetId: model.id,
    });
    await em.flush();
    return model;
  }

  async delete(principal: Principal, id: string): Promise<string> {
    const em = this.orm.em.fork();
    const model = this.assertChangeable(principal, await this.find(em, id));
    // Likes and follows go with it (ON DELETE CASCADE).
    await em.transactional(async (tx) => {
      await tx.nativeDelete(Model, { id: model.id });
      this.audit?.recordForTeam(tx, principal, {
        action: 'model.deleted',
        targetType: 'model',
        targetId: model.id,
      });
    });
    return model.id;
  }

  /** Likes or follows (`on`) or takes it back; idempotent. Reactions belong to the principal's user. */
  async react(principal: Principal, id: string, kind: ReactionKind, on: boolean): Promise<Model> {
    const em = this.orm.em.fork();
    const model = await this.find(em, id);
    const entity = reactionEntity(kind);
    const user = principal.user.id;
    if (!on) {
      await em.nativeDelete(entity, { model: model.id, user });
      return model;
    }
    try {
      await em
        .createQueryBuilder(entity)
        .insert({ id: randomUUID(), model: model.id, user, createdAt: new Date() })
        .onConflict(['model_id', 'user_id'])
        .ignore()
        .execute();
    } catch (err) {
      // Deleted between the read and the insert.
      if (err instanceof ForeignKeyConstraintViolationException) throw AppError.notFound('model');
      throw err;
    }
    return model;
  }

  /** The models the principal's user likes or follows, most recent reaction first. */
  async reacted(principal: Principal, kind: ReactionKind, args: PageArgs): Promise<Page<ModelReaction>> {
    return findPage(this.orm.em.fork(), reactionEntity(kind), { user: principal.user.id }, args, {
      populate: ['model'],
    });
  }

  /** One query for a whole list of models (a DataLoader batch). */
  async reactionStats(
    principal: Principal,
    kind: ReactionKind,
    modelIds: readonly string[],
  ): Promise<ReactionStats[]> {
    const em = this.orm.em.fork();
    const rows: { model_id: string; count: number; viewer: boolean }[] = await em
      .createQueryBuilder(reactionEntity(kind), 'r')
      .select([
        'r.model_id',
        raw('count(*)::int as count'),
        raw('bool_or(r.user_id = ?) as viewer', [principal.user.id]),
      ])
      .where({ model: { $in: [...modelIds] } })
      .groupBy('r.model_id')
      .execute('all', false);
    const byModel = new Map(rows.map((r) => [r.model_id, r]));
    return modelIds.map((id) => {
      const row = byModel.get(id);
      return { count: row?.count ?? 0, viewer: row?.viewer ?? false };
    });
  }

  private async find(em: EntityManager, id: string): Promise<Model> {
    const model = isUuid(id) ? await em.findOne(Model, { id: id.toLowerCase() }) : null;
    if (!model) throw AppError.notFound('model');
    return model;
  }

  /** Everybody sees every model, so a model one may not change is 403, not 404. */
  private assertChangeable(principal: Principal, model: Model): Model {
    if (model.builtin)
      throw new AppError('FORBIDDEN', 'built-in models belong to the service and cannot be changed');
    if (mayChange(principal, model)) return model;
    if (isOwnedBy(model as { ownerType: OwnerType; ownerId: string }, principal))
      authorize(principal, 'manage', 'update or delete team models');
    throw new AppError('FORBIDDEN', "only the model's owner can change it");
  }
}
