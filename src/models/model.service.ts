import { randomUUID } from 'node:crypto';
import {
  ForeignKeyConstraintViolationException,
  LockMode,
  UniqueConstraintViolationException,
  raw,
  type FilterQuery,
} from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { isOwnedBy, ownedBy, type OwnerType, type Principal } from '../common/principal';
import type { AuditLog } from '../teams/audit.service';
import { authorize, may } from '../teams/team.roles';
import { AppError } from '../common/errors';
import type { MachineTypes } from '../common/machine-types';
import { isUuid } from '../common/ids';
import { raw as rawSql, type StatementPart } from '../db/sql';
import { findPage, pageSize, type Page, type PageArgs } from '../common/pagination';
import { normaliseTags } from '../common/tags';
import { readByIds, rowReader, textArray } from '../db/rows';
import { sqlPage, type SqlCondition } from '../db/sql-page';
import { Team } from '../teams/team.entity';
import { Model, ModelFollow, ModelLike, ModelVersion, type ModelReaction } from './model.entity';
import { checkDefinition, type ModelDefinitionInput } from './model.validation';
import { recordVersion } from './model.version';

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

type Access = Pick<Model, 'builtin' | 'ownerType' | 'ownerId' | 'visibility' | 'sharedWith'>;

/** Whether the principal acts as the model's owner (built-in models have none). */
function isOwner(principal: Principal, model: Pick<Model, 'ownerType' | 'ownerId'>): boolean {
  if (!model.ownerType || !model.ownerId) return false;
  return isOwnedBy({ ownerType: model.ownerType, ownerId: model.ownerId }, principal);
}

/** Who may change a model: its owner only. Built-in models belong to the service. */
export function mayChange(principal: Principal, model: Pick<Model, 'builtin' | 'ownerType' | 'ownerId'>) {
  if (model.builtin || !isOwner(principal, model)) return false;
  // A team's models are changed by its admins and owners (the role matrix, src/teams/team.roles.ts).
  return may(principal, 'manage');
}

/**
 * Who sees a model: a public one every principal; a private one its owner (for a team's model,
 * every member acting for the team, viewers too) and the principals acting for a team it is shared
 * with. Everybody else gets 404, as if it did not exist.
 */
export function maySee(principal: Principal, model: Access): boolean {
  if (model.visibility !== 'private') return true;
  if (isOwner(principal, model)) return true;
  return !!principal.team && model.sharedWith.includes(principal.team.id);
}

/** maySee as a query condition on models. */
export function visibleTo(principal: Principal): FilterQuery<Model> {
  const visible: FilterQuery<Model>[] = [{ visibility: 'public' }, ownedBy(principal)];
  if (principal.team) visible.push({ sharedWith: { $contains: [principal.team.id] } });
  return { $or: visible };
}

/** Counts one deployment of a model on its own (tests; deployments compose runCountPart). */
export async function incrementRunCount(em: EntityManager, modelId: string): Promise<void> {
  await em.execute('update models set run_count = run_count + 1 where id = ?', [modelId]);
}

/**
 * The part of the statement creating deployments that counts them, one per new job of `jobs`
 * (a CTE of `jobs` rows), so the count and the deployments commit together (the job lifecycle's
 * JobStatementParts.created, wired in server/services.ts).
 */
export function runCountPart(made: { jobs: string }): StatementPart {
  return {
    ctes: [
      {
        name: 'model_runs',
        sql: rawSql(`update models m set run_count = m.run_count + n.runs
                  from (select model_id, count(*) as runs from ${made.jobs} group by model_id) n
                  where m.id = n.model_id`),
      },
    ],
  };
}

/** A page of a model's versions, newest first; the cursor is a sequence number. */
export interface VersionPage {
  items: ModelVersion[];
  endCursor: string | null;
  hasNextPage: boolean;
}

/** The model catalogue: principals read the models they may see; only a model's owner changes it. */
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
    await this.assertTeams(em, definition.sharedWith);
    try {
      return await em.transactional(async (tx) => {
        const model = tx.create(Model, {
          ...definition,
          ...(input.id ? { id: input.id.toLowerCase() } : {}),
          ...ownedBy(principal),
        });
        this.audit?.recordForTeam(tx, principal, {
          action: 'model.created',
          targetType: 'model',
          targetId: model.id,
        });
        await tx.flush();
        await recordVersion(tx, model.id);
        return model;
      });
    } catch (err) {
      if (err instanceof UniqueConstraintViolationException)
        throw new AppError('CONFLICT', 'a model with this id exists already');
      throw err;
    }
  }

  /**
   * Any model by id, or 404, as a plain read-only row: the deployments module reads one per
   * deployment, and the ORM's hydration cost more than the query.
   */
  async get(principal: Principal, id: string): Promise<Model> {
    const [model] = await readByIds(this.orm, Model, [id.toLowerCase()]);
    if (!model || !maySee(principal, model)) throw AppError.notFound('model');
    return model;
  }

  /**
   * Models by id (for DataLoaders), as plain read-only rows; deleted ones are simply absent. Whoever
   * shows one to a principal checks maySee first (ModelType.seenBy).
   */
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
    // Most models are public: whom a model is visible to is checked per row, within the budget.
    const self = ownedBy(principal);
    const visible: SqlCondition = principal.team
      ? [
          "(visibility = 'public' or (owner_type = ? and owner_id = ?) or shared_with @> array[?]::text[])",
          self.ownerType,
          self.ownerId,
          principal.team.id,
        ]
      : ["(visibility = 'public' or (owner_type = ? and owner_id = ?))", self.ownerType, self.ownerId];
    return sqlPage(
      this.orm.em,
      'models',
      {
        where: [],
        // The owner's rows through its own index, even when it holds most of the catalogue.
        within: owner
          ? { columns: ['owner_type', 'owner_id'], values: [owner.ownerType, owner.ownerId] }
          : undefined,
        filter: [
          ...(owner ? [] : [visible]),
          ...(tags.length ? [['tags && ?::text[]', textArray(tags)] as SqlCondition] : []),
        ],
      },
      args,
      rowReader(this.orm, Model),
    );
  }

  /** Changes the given fields; a change to what runs makes a new version, in the same transaction. */
  async update(principal: Principal, id: string, input: ModelDefinitionInput): Promise<Model> {
    return this.orm.em.fork().transactional(async (em) => {
      // Locked, so concurrent updates number their versions one after the other.
      const model = this.assertChangeable(principal, await this.find(em, principal, id, true));
      const definition = checkDefinition(input, model, { machineTypes: this.machineTypes });
      if (input.sharedWith !== undefined) await this.assertTeams(em, definition.sharedWith);
      em.assign(model, definition);
      this.audit?.recordForTeam(em, principal, {
        action: 'model.updated',
        targetType: 'model',
        targetId: model.id,
      });
      await em.flush();
      await recordVersion(em, model.id);
      return model;
    });
  }

  /** Deletes the model with its likes and follows; its versions stay, for the jobs that ran them. */
  async delete(principal: Principal, id: string): Promise<string> {
    const em = this.orm.em.fork();
    const model = this.assertChangeable(principal, await this.find(em, principal, id));
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
    const model = await this.find(em, principal, id);
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

  /**
   * The models the principal's user likes or follows, most recent reaction first; those the
   * principal may not see (since made private, or another principal's) are left out.
   */
  async reacted(principal: Principal, kind: ReactionKind, args: PageArgs): Promise<Page<ModelReaction>> {
    return findPage(
      this.orm.em.fork(),
      reactionEntity(kind),
      { user: principal.user.id, model: visibleTo(principal) },
      args,
      { populate: ['model'] },
    );
  }

  /** A model's versions, newest first (404 for a model the principal does not see). */
  async versions(principal: Principal, modelId: string, args: PageArgs): Promise<VersionPage> {
    const model = await this.get(principal, modelId);
    const limit = pageSize(args.first);
    const after = args.after === undefined || args.after === null ? null : Number(args.after);
    if (after !== null && !(Number.isInteger(after) && after > 0))
      throw AppError.validation({ cursor: 'is not a cursor this service issued' });
    const rows = await this.orm.em
      .fork()
      .find(
        ModelVersion,
        { modelId: model.id, ...(after === null ? {} : { sequence: { $lt: after } }) },
        { orderBy: { sequence: 'desc' }, limit: limit + 1 },
      );
    const items = rows.slice(0, limit);
    return {
      items,
      hasNextPage: rows.length > limit,
      endCursor: items.length ? String(items[items.length - 1].sequence) : null,
    };
  }

  /** One version of a model (404 for another model's version, or a model the principal does not see). */
  async version(principal: Principal, modelId: string, versionId: string): Promise<ModelVersion> {
    const model = await this.get(principal, modelId);
    const version = isUuid(versionId)
      ? await this.orm.em.fork().findOne(ModelVersion, { id: versionId.toLowerCase(), modelId: model.id })
      : null;
    if (!version) throw AppError.notFound('model version');
    return version;
  }

  /**
   * What a deployment runs: the model the principal sees (else 404) and its version `versionId`,
   * or its latest without one. A version of another model (or no version id at all) is 400.
   */
  async runnable(
    principal: Principal,
    modelId: string,
    versionId?: string | null,
  ): Promise<{ model: Model; version: ModelVersion }> {
    const model = await this.get(principal, modelId);
    const pinned = versionId !== undefined && versionId !== null;
    const version = pinned
      ? isUuid(versionId)
        ? await this.orm.em.fork().findOne(ModelVersion, { id: versionId.toLowerCase(), modelId: model.id })
        : null
      : (await this.latestVersions([model.id]))[0];
    if (!version)
      throw pinned
        ? AppError.validation({ versionId: 'is not a version of this model' })
        : new AppError('CONFLICT', 'this model has no version to run');
    return { model, version };
  }

  /** The latest version of each model (a DataLoader batch); null where a model has none. */
  async latestVersions(modelIds: readonly string[]): Promise<(ModelVersion | null)[]> {
    const rows = await this.orm.em
      .fork()
      .createQueryBuilder(ModelVersion, 'v')
      .where({ modelId: { $in: [...modelIds] } })
      .andWhere('v.sequence = (select max(w.sequence) from model_versions w where w.model_id = v.model_id)')
      .getResultList();
    const byModel = new Map(rows.map((v) => [v.modelId, v]));
    return modelIds.map((id) => byModel.get(id) ?? null);
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

  /** A model the principal sees, or 404; `lock`: held until the transaction ends. */
  private async find(em: EntityManager, principal: Principal, id: string, lock = false): Promise<Model> {
    const model = isUuid(id)
      ? await em.findOne(
          Model,
          { id: id.toLowerCase() },
          lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {},
        )
      : null;
    if (!model || !maySee(principal, model)) throw AppError.notFound('model');
    return model;
  }

  /** Teams a model is shared with must exist. */
  private async assertTeams(em: EntityManager, ids: string[]): Promise<void> {
    if (!ids.length) return;
    const found = new Set((await em.find(Team, { id: { $in: ids } }, { fields: ['id'] })).map((t) => t.id));
    const unknown = ids.find((id) => !found.has(id));
    if (unknown) throw AppError.validation({ sharedWith: `${unknown} is not a team` });
  }

  /** A model one sees but may not change is 403 (a shared team's, a public one's); one not seen was 404. */
  private assertChangeable(principal: Principal, model: Model): Model {
    if (model.builtin)
      throw new AppError('FORBIDDEN', 'built-in models belong to the service and cannot be changed');
    if (mayChange(principal, model)) return model;
    if (isOwnedBy(model as { ownerType: OwnerType; ownerId: string }, principal))
      authorize(principal, 'manage', 'update or delete team models');
    throw new AppError('FORBIDDEN', "only the model's owner can change it");
  }
}
