import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Page, PageArgs } from '../common/pagination';
import { rowReader } from '../db/rows';
import { sqlPage, type SqlCondition } from '../db/sql-page';
import { isUuid } from '../common/ids';
import { raw, sql, type StatementPart } from '../db/sql';
import { AuditRecord, type AuditVia } from './team.entity';
import type { Principal } from '../common/principal';

export interface AuditEntry {
  /** Dotted: `member.role_changed`, `api_key.created`, ... (docs/teams.md lists them). */
  action: string;
  targetType: string;
  targetId?: string | null;
  details?: Record<string, unknown>;
}

const viaOf = (caller: Principal): AuditVia =>
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
  record(em: EntityManager, caller: Principal, teamId: string, entry: AuditEntry): void {
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
   * CTE (`team_audit`) inserting one record per row of `rows.from` (none when the change touched
   * no row). The target id is `rows.targetSql` (an expression over them) or the entry's. Null
   * acting as a user.
   */
  statementPart(
    caller: Principal,
    entry: AuditEntry,
    rows: { from: string; targetSql?: string },
  ): StatementPart | null {
    if (!caller.team) return null;
    const target = rows.targetSql ? raw(rows.targetSql) : sql`${entry.targetId ?? null}`;
    return {
      ctes: [
        {
          name: 'team_audit',
          sql: sql`insert into team_audit (id, team_id, created_at, actor_user_id, actor_via, actor_api_key_id, action,
                                    target_type, target_id, details, client_address, request_id)
            select gen_random_uuid(), ${caller.team.id}::uuid, now(), ${caller.user.id || null}::uuid, ${viaOf(caller)},
                   ${caller.apiKeyId}::uuid, ${entry.action}, ${entry.targetType}, ${target},
                   ${JSON.stringify(entry.details ?? {})}::jsonb, ${caller.origin?.clientAddress ?? null},
                   ${caller.origin?.requestId ?? null}
            from ${raw(rows.from)}`,
        },
      ],
    };
  }

  /** Records an action taken for the caller's team; acting as a user records nothing. */
  recordForTeam(em: EntityManager, caller: Principal, entry: AuditEntry): void {
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
