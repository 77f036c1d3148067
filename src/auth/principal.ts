import { AppError } from '../common/errors';
import type { Team, TeamRole } from '../teams/team.entity';
import type { User } from '../users/user.entity';

export type OwnerType = 'user' | 'team';

/** Who owns a row: a user or a team. Owned entities store it as (owner_type, owner_id). */
export interface Owner {
  type: OwnerType;
  id: string;
}

/** The authenticated caller of one request, from exactly one credential. */
export interface Principal {
  /** The person behind the credential (for a team token: the key's creator). */
  user: User;
  /** Set when the credential is a team's organisation token. */
  team: Team | null;
  /**
   * `session`: the `auth_session` cookie, accepted by `fetch-metadata` only. `session_token`: an
   * access token the web app got from its session, acting as the user or one of the user's teams.
   * `service`: the service reading on an owner's behalf (`actingAs`), never a request's.
   */
  credential: 'user_token' | 'api_key' | 'session' | 'session_token' | 'service';
  apiKeyId: string | null;
  isAdmin: boolean;
  /**
   * The caller's role in `team`, resolved once at authentication: a session token's is the user's
   * membership now, a team API key's is the key's own. Null when acting as the user.
   */
  teamRole: TeamRole | null;
  /** Where the request came from, for audit records; set per request by the server. */
  origin?: { requestId: string; clientAddress: string | null };
}

export function ownerOf(principal: Principal): Owner {
  return principal.team ? { type: 'team', id: principal.team.id } : { type: 'user', id: principal.user.id };
}

/** A filter that scopes a query on an owned entity to the principal's owner. */
export function ownedBy(principal: Principal): { ownerType: OwnerType; ownerId: string } {
  const owner = ownerOf(principal);
  return { ownerType: owner.type, ownerId: owner.id };
}

export function isOwnedBy(row: { ownerType: OwnerType; ownerId: string }, principal: Principal): boolean {
  const owner = ownerOf(principal);
  return row.ownerType === owner.type && row.ownerId === owner.id;
}

/** Loads-or-404: a foreign row is indistinguishable from a missing one. */
export function assertOwned<T extends { ownerType: OwnerType; ownerId: string }>(
  row: T | null | undefined,
  principal: Principal,
  what: string,
): T {
  if (!row || !isOwnedBy(row, principal)) throw AppError.notFound(what);
  return row;
}

export function requirePrincipal(principal: Principal | null): Principal {
  if (!principal) throw new AppError('UNAUTHENTICATED', 'authentication required');
  return principal;
}

export function requireUserToken(principal: Principal, action: string): void {
  if (principal.team) throw new AppError('FORBIDDEN', `a team token cannot ${action}`);
}

/**
 * A principal for reads the service makes on an owner's behalf, outside any request (the job a
 * webhook message carries is read as its owner reads it). It has no credential and no user details.
 */
export function actingAs(owner: Owner): Principal {
  return {
    user: { id: owner.type === 'user' ? owner.id : '' } as User,
    team: owner.type === 'team' ? ({ id: owner.id } as Team) : null,
    credential: 'service',
    apiKeyId: null,
    isAdmin: false,
    teamRole: owner.type === 'team' ? 'viewer' : null,
  };
}
