import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Page, PageArgs } from '../common/pagination';
import { rowReader } from '../db/rows';
import { sqlPage, type SqlCondition } from '../db/sql-page';
import { isUuid } from '../common/ids';
import { AuditRecord, type AuditVia } from './team.entity';
import type { TeamCaller } from './team.roles';

export interface AuditEntry {
  /** Dotted: `member.role_changed`, `api_key.created`, ... (docs/teams.md lists them). */
  action: string;
  targetType: string;
  targetId?: string | null;
  details?: Record<string, unknown>;
}

const viaOf = (caller: TeamCaller): AuditVia =>
  caller.credential === 'api_key'
    ? 'api_key'
    : caller.credential === 'session_token' || caller.credential === 'session'
      ? 'session'
      : 'user_token';

/**
 * The teams' audit log. A record is added to the EntityManager of the change it tells about, so
 * the change's own flush or transaction writes both or neither.
 */
export class AuditLog {
  constructor(
    private readonly orm: MikroORM,
    private readonly retentionDays: number,
  ) {}

  /** Adds the record of a change made for `teamId` to the unit of work of `em`. */
  record(em: EntityManager, caller: TeamCaller, teamId: string, entry: AuditEntry): void {
    em.create(AuditRecord, {
      teamId,
      actorUserId: caller.user.id || null,
      actorVia: viaOf(caller),
      actorApiKeyId: caller.apiKeyId,
      action: entry.action,
      targetType: entry.targetType,
      targetId: entry.targetId ?? null,
      details: entry.details ?? {},
      clientAddress: caller.origin?.clientAddress ?? null,
      requestId: caller.origin?.requestId ?? null,
    });
  }

  /**
   * The same record as a part of one SQL statement, for changes written by a single statement: a
   * CTE body inserting one record per row of `from` (none when the change touched no row). The
   * target id is `targetSql` (an expression over `from`) or the entry's. Null acting as a user.
   */
  statementPart(
    caller: TeamCaller,
    entry: AuditEntry,
    from: string,
    targetSql?: string,
  ): { sql: string; params: unknown[] } | null {
    if (!caller.team) return null;
    return {
      sql: `insert into team_audit (id, team_id, created_at, actor_user_id, actor_via, actor_api_key_id, action,
                                    target_type, target_id, details, client_address, request_id)
            select gen_random_uuid(), ?::uuid, now(), ?::uuid, ?, ?::uuid, ?, ?, ${targetSql ?? '?'}, ?::jsonb, ?, ?
            from ${from}`,
      params: [
        caller.team.id,
        caller.user.id || null,
        viaOf(caller),
        caller.apiKeyId,
        entry.action,
        entry.targetType,
        ...(targetSql ? [] : [entry.targetId ?? null]),
        JSON.stringify(entry.details ?? {}),
        caller.origin?.clientAddress ?? null,
        caller.origin?.requestId ?? null,
      ],
    };
  }

  /** Records an action taken for the caller's team; acting as a user records nothing. */
  recordForTeam(em: EntityManager, caller: TeamCaller, entry: AuditEntry): void {
    if (caller.team) this.record(em, caller, caller.team.id, entry);
  }

  /**
   * A team's records, newest first, as plain read-only rows (the caller's right to read them is
   * checked by TeamService). The filters are checked per row within the scan budget: an action
   * or an actor may be rare among years of records.
   */
  async list(
    teamId: string,
    filter: { action?: string | null; actorId?: string | null },
    args: PageArgs,
  ): Promise<Page<AuditRecord>> {
    const checks: SqlCondition[] = [];
    if (filter.action) checks.push(['action = ?', filter.action]);
    if (filter.actorId) {
      if (!isUuid(filter.actorId)) return { items: [], hasNextPage: false, endCursor: null };
      checks.push(['actor_user_id = ?', filter.actorId.toLowerCase()]);
    }
    return sqlPage(
      this.orm.em,
      'team_audit',
      { where: [['team_id = ?', teamId]], filter: checks },
      args,
      rowReader(this.orm, AuditRecord),
    );
  }

  /** Drops the records older than AUDIT_RETENTION_DAYS; the worker's sweeper calls it. */
  async sweep(now = new Date()): Promise<number> {
    const before = new Date(now.getTime() - this.retentionDays * 86_400_000);
    return this.orm.em.fork().nativeDelete(AuditRecord, { createdAt: { $lt: before } });
  }
}
