import { TEAM_ROLES, type Principal, type TeamRole } from '../common/principal';
import { AppError } from '../common/errors';

/**
 * The role matrix, the one place that says which team role may do what (docs/teams.md has it as
 * a table). Every service asks `may` or `authorize` before it changes or reveals anything for a team.
 */
export type TeamAction = 'read' | 'write' | 'manage' | 'own';

/** The least role each kind of action needs. */
const LEAST_ROLE: Readonly<Record<TeamAction, TeamRole>> = {
  /** read the team's media, models, deployments, jobs, usage */
  read: 'viewer',
  /** upload, tag and delete media; create deployments; cancel and retry jobs; create models */
  write: 'member',
  /** update or delete team models; team API keys; webhook secret; invitations, non-owner members; audit log */
  manage: 'admin',
  /** make or remove owners; delete the team; budgets */
  own: 'owner',
};

export const rankOf = (role: TeamRole): number => TEAM_ROLES.indexOf(role);

export function roleAllows(role: TeamRole, action: TeamAction): boolean {
  return rankOf(role) >= rankOf(LEAST_ROLE[action]);
}

export function forbidden(role: TeamRole, what: string): AppError {
  return new AppError('FORBIDDEN', `a team ${role} cannot ${what}`);
}

type Acting = Pick<Principal, 'team' | 'teamRole'>;

/** The role a caller acts with: null acting as a user; a team credential without one is a viewer. */
const roleOf = (caller: Acting): TeamRole | null => (caller.team ? (caller.teamRole ?? 'viewer') : null);

/**
 * Whether `caller` may do `action`. A caller acting as a user owns what it reaches and may: which
 * rows are reachable is the owner filter's job. One acting for a team may as its role allows.
 */
export function may(caller: Acting, action: TeamAction): boolean {
  const role = roleOf(caller);
  return role === null || roleAllows(role, action);
}

/** Refuses (403) what `may` refuses, naming the caller's role. */
export function authorize(caller: Acting, action: TeamAction, what: string): void {
  if (!may(caller, action)) throw forbidden(roleOf(caller) ?? 'viewer', what);
}

/** Refuses (403) an API key what only a person may do. */
export function refuseApiKey(caller: Pick<Principal, 'credential'>, what: string): void {
  if (caller.credential === 'api_key') throw new AppError('FORBIDDEN', `an API key cannot ${what}`);
}
