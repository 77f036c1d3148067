import { createHash, randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { AppError } from '../common/errors';
import type { IdempotentCreation } from '../graphql/graphql.context';
import { findPage, type Page, type PageArgs } from '../common/pagination';
import { isUuid } from '../common/ids';
import { validateName, type TeamService } from '../teams/team.service';
import { ApiKey } from './api-key.entity';
import { isOwnedBy, ownedBy, requireUserToken, type Principal } from './principal';

export function hashApiKey(value: string): string {
  return createHash('sha256').update(value.toLowerCase()).digest('hex');
}

/** What an API key is called among the things made under an Idempotency-Key. */
const IDEMPOTENT_KIND = 'api_key';

/** lastUsedAt is a hint for humans; writing it at most once a minute keeps reads cheap. */
const LAST_USED_RESOLUTION_MS = 60_000;

export class ApiKeyService {
  constructor(
    private readonly orm: MikroORM,
    private readonly teams: TeamService,
  ) {}

  /**
   * Creates a key for the user, or for a team the user owns. The value is returned only here, so
   * a repeat (same Idempotency-Key) of a request whose process died before storing its answer
   * cannot answer it again: CONFLICT, naming the key made, rather than a second key.
   */
  async create(
    principal: Principal,
    input: { name: string; teamId?: string | null },
    idempotency?: IdempotentCreation,
  ): Promise<{ key: ApiKey; value: string }> {
    requireUserToken(principal, 'create API keys');
    const earlier = idempotency?.previous(IDEMPOTENT_KIND);
    if (earlier)
      throw new AppError(
        'CONFLICT',
        `the first request with this Idempotency-Key created API key ${earlier}, but its answer, ` +
          `the only one to show the key, was not stored (the service stopped); revoke that key ` +
          `(DELETE /api/v1/tokens/${earlier}) and create another under a new Idempotency-Key`,
      );
    const name = validateName(input.name);
    const membership = input.teamId ? await this.teams.requireRole(principal, input.teamId, ['owner']) : null;
    const value = randomUUID();
    // The key and, under an Idempotency-Key, the record that it was made: one transaction.
    const key = await this.orm.em.fork().transactional(async (em) => {
      const created = em.create(ApiKey, {
        name,
        keyHash: hashApiKey(value),
        ownerType: membership ? 'team' : 'user',
        ownerId: membership ? membership.team.id : principal.user.id,
        createdBy: principal.user.id,
        team: membership?.team.id ?? null,
      });
      const made = idempotency?.record(IDEMPOTENT_KIND, created.id);
      if (made) await em.execute(made.sql, made.params);
      return created; // flushed as the transaction commits
    });
    return { key, value };
  }

  /** The principal's own keys; a team owner may list a team's keys by naming the team. */
  async list(principal: Principal, input: { teamId?: string | null }, args: PageArgs): Promise<Page<ApiKey>> {
    let where: { ownerType: 'user' | 'team'; ownerId: string } = ownedBy(principal);
    if (input.teamId && !(principal.team && principal.team.id === input.teamId)) {
      const membership = await this.teams.requireRole(principal, input.teamId, ['owner']);
      where = { ownerType: 'team', ownerId: membership.team.id };
    }
    return findPage(this.orm.em.fork(), ApiKey, where, args);
  }

  /** Revocation is immediate: every request looks the key up afresh. Revoking twice is a no-op. */
  async revoke(principal: Principal, id: string): Promise<ApiKey> {
    const em = this.orm.em.fork();
    const key = isUuid(id) ? await em.findOne(ApiKey, { id }) : null;
    if (!key || !(await this.mayManage(principal, key))) throw AppError.notFound('API key');
    if (!key.revokedAt) {
      key.revokedAt = new Date();
      await em.flush();
    }
    return key;
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

  private async mayManage(principal: Principal, key: ApiKey): Promise<boolean> {
    if (isOwnedBy(key, principal)) return true;
    if (principal.team || key.ownerType !== 'team') return false;
    return this.teams
      .requireRole(principal, key.ownerId, ['owner'])
      .then(() => true)
      .catch(() => false);
  }
}
