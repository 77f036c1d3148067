import { createHash, randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { AppError } from '../common/errors';
import type { IdempotentCreation } from '../common/idempotent-creation';
import { findPage, type Page, type PageArgs } from '../common/pagination';
import { isUuid } from '../common/ids';
import type { AuditLog } from '../teams/audit.service';
import { forbidden, rankOf, refuseApiKey, roleAllows } from '../teams/team.roles';
import { validateName, validateRole, type TeamService } from '../teams/team.service';
import { ApiKey } from './api-key.entity';
import { isOwnedBy, ownedBy, type Principal, type TeamRole } from '../common/principal';

export function hashApiKey(value: string): string {
  return createHash('sha256').update(value.toLowerCase()).digest('hex');
}

/** What an API key is called among the things made under an Idempotency-Key. */
const IDEMPOTENT_KIND = 'api_key';

/** The roles a team key may have: it never manages the team. */
const KEY_ROLES: readonly TeamRole[] = ['viewer', 'member'];

/** lastUsedAt is a hint for humans; writing it at most once a minute keeps reads cheap. */
const LAST_USED_RESOLUTION_MS = 60_000;

export class ApiKeyService {
  constructor(
    private readonly orm: MikroORM,
    private readonly teams: TeamService,
    private readonly audit: AuditLog,
  ) {}

  /**
   * Creates a key for the user, or (admins and owners) for a team with a role (`member` by default,
   * never above the creator's). The value is returned only here, so a repeat (same
   * Idempotency-Key) of a request whose process died before storing its answer cannot answer it
   * again: CONFLICT, naming the key made, rather than a second key.
   */
  async create(
    principal: Principal,
    input: { name: string; teamId?: string | null; role?: string | null },
    idempotency?: IdempotentCreation,
  ): Promise<{ key: ApiKey; value: string }> {
    refuseApiKey(principal, 'create API keys');
    const earlier = idempotency?.previous(IDEMPOTENT_KIND);
    if (earlier)
      throw new AppError(
        'CONFLICT',
        `the first request with this Idempotency-Key created API key ${earlier}, but its answer, ` +
          `the only one to show the key, was not stored (the service stopped); revoke that key ` +
          `(DELETE /api/v1/tokens/${earlier}) and create another under a new Idempotency-Key`,
      );
    const name = validateName(input.name);
    const teamId = input.teamId ?? principal.team?.id ?? null;
    if (!teamId && input.role) throw AppError.validation({ role: 'only a team key has a role' });
    const role = teamId ? validateRole(input.role ?? 'member', 'role', KEY_ROLES) : null;
    const em = this.orm.em.fork();
    return em.transactional(async (tx) => {
      const team = teamId
        ? await this.teams.require(principal, teamId, 'manage', 'create team API keys', tx)
        : null;
      if (team && role && rankOf(role) > rankOf(team.role))
        throw new AppError('FORBIDDEN', `a key's role cannot exceed its creator's (${team.role})`);
      const value = randomUUID();
      const key = tx.create(ApiKey, {
        name,
        keyHash: hashApiKey(value),
        ownerType: team ? 'team' : 'user',
        ownerId: team ? team.team.id : principal.user.id,
        createdBy: principal.user.id,
        team: team?.team.id ?? null,
        role,
      });
      if (team)
        this.audit.record(tx, principal, team.team.id, {
          action: 'api_key.created',
          targetType: 'api_key',
          targetId: key.id,
          details: { name, role },
        });
      // Under an Idempotency-Key, the record that it was made: in the same transaction.
      const made = idempotency?.record(IDEMPOTENT_KIND, key.id);
      if (made) await tx.execute(made.sql, made.params);
      await tx.flush();
      await tx.populate(key, ['createdBy']);
      return { key, value };
    });
  }

  /** The principal's own keys; a team's admins and owners list a team's keys by naming the team. */
  async list(principal: Principal, input: { teamId?: string | null }, args: PageArgs): Promise<Page<ApiKey>> {
    let where: { ownerType: 'user' | 'team'; ownerId: string } = ownedBy(principal);
    if (input.teamId || principal.team) {
      const { team } = await this.teams.require(
        principal,
        input.teamId ?? principal.team?.id,
        'manage',
        'list team API keys',
      );
      where = { ownerType: 'team', ownerId: team.id };
    }
    return findPage(this.orm.em.fork(), ApiKey, where, args, { populate: ['createdBy'] });
  }

  /** Revocation is immediate: every request looks the key up afresh. Revoking twice is a no-op. */
  async revoke(principal: Principal, id: string): Promise<ApiKey> {
    return this.orm.em.fork().transactional(async (em) => {
      const key = isUuid(id) ? await em.findOne(ApiKey, { id }, { populate: ['createdBy'] }) : null;
      if (!key) throw AppError.notFound('API key');
      if (key.ownerType === 'team') {
        // Another team's key looks missing; any other failure (an outage) is answered as itself.
        const view = await this.teams.access(principal, key.ownerId, em).catch((err: unknown) => {
          if (err instanceof AppError && err.code === 'NOT_FOUND') return null;
          throw err;
        });
        if (!view) throw AppError.notFound('API key');
        if (!roleAllows(view.role, 'manage')) throw forbidden(view.role, 'revoke team API keys');
      } else if (!isOwnedBy(key, principal)) {
        throw AppError.notFound('API key');
      }
      if (!key.revokedAt) {
        key.revokedAt = new Date();
        if (key.ownerType === 'team')
          this.audit.record(em, principal, key.ownerId, {
            action: 'api_key.revoked',
            targetType: 'api_key',
            targetId: key.id,
            details: { name: key.name, role: key.role },
          });
      }
      return key;
    });
  }

  /** Finds the live key with this value, with its creator and team loaded. */
  async resolve(value: string): Promise<ApiKey | null> {
    const em = this.orm.em.fork();
    const key = await em.findOne(
      ApiKey,
      { keyHash: hashApiKey(value), revokedAt: null },
      { populate: ['createdBy', 'team'] },
    );
    if (key && (!key.lastUsedAt || Date.now() - key.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS)) {
      await em.nativeUpdate(ApiKey, { id: key.id }, { lastUsedAt: new Date() });
    }
    return key;
  }
}
