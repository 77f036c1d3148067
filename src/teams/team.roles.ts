import { AppError } from '../common/errors';
import type { User } from '../users/user.entity';
import { TEAM_ROLES, type TeamRole } from './team.entity';

/**
 * The role matrix, the one place that says which team role may do what (docs/teams.md has it as
 * a table). Every service asks `authorize` before it changes or reveals anything for a team.
 */
export type TeamAction = 'read' | 'write' | 'manage' | 'own';

/** The least role each kind of action needs. */
export const LEAST_ROLE: Readonly<Record<TeamAction, TeamRole>> = {
  /** read the team's media, models, deployments, jobs, usage */
  read: 'viewer',
  /** upload, tag and delete media; create deployments; cancel and retry jobs; create models */
  write: 'member',
  /** update or delete team models; team API keys; webhook secret; invitations, non-owner members; audit log */
  manage: 'admin',
  /** make or remove owners; delete the team; budgets */
  own: 'owner',
};

/**
 * Who calls, as far as teams care: the Principal of src/auth satisfies it (teams sit below auth,
 * so they name only the fields they read).
 */
export interface TeamCaller {
  user: User;
  team: { id: string } | null;
  teamRole: TeamRole | null;
  credential: string;
  apiKeyId: string | null;
  origin?: { requestId: string; clientAddress: string | null };
}

export const rankOf = (role: TeamRole): number => TEAM_ROLES.indexOf(role);

export function roleAllows(role: TeamRole, action: TeamAction): boolean {
  return rankOf(role) >= rankOf(LEAST_ROLE[action]);
}

export function forbidden(role: TeamRole, what: string): AppError {
  return new AppError('FORBIDDEN', `a team ${role} cannot ${what}`);
}

/**
 * Refuses (403) a caller acting for a team whose role is below what `action` needs. A caller acting
 * as a user owns what it reaches and passes: which rows are reachable is the owner filter's job.
 */
export function authorize(
  caller: Pick<TeamCaller, 'team' | 'teamRole'>,
  action: TeamAction,
  what: string,
): void {
  if (!caller.team) return;
  const role = caller.teamRole ?? 'viewer';
  if (!roleAllows(role, action)) throw forbidden(role, what);
}
