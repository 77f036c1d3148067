import type { MikroORM } from '@mikro-orm/postgresql';
import { requireUserToken, type Principal } from '../auth/principal';
import { AppError } from '../common/errors';
import { isUuid } from '../common/ids';
import { findPage, type Page, type PageArgs } from '../common/pagination';
import { Team, TeamMember, type TeamRole } from './team.entity';

export interface TeamView {
  team: Team;
  role: TeamRole;
}

export function validateName(name: unknown, field = 'name'): string {
  const trimmed = typeof name === 'string' ? name.trim() : '';
  if (!trimmed) throw AppError.validation({ [field]: 'is required' });
  if (trimmed.length > 100) throw AppError.validation({ [field]: 'must be at most 100 characters' });
  return trimmed;
}

export class TeamService {
  constructor(private readonly orm: MikroORM) {}

  async create(principal: Principal, input: { name: string }): Promise<TeamView> {
    requireUserToken(principal, 'create teams');
    const name = validateName(input.name);
    const em = this.orm.em.fork();
    const team = em.create(Team, { name, createdBy: principal.user.id });
    em.create(TeamMember, { team, user: principal.user.id, role: 'owner' });
    await em.flush();
    return { team, role: 'owner' };
  }

  /** A user token lists the user's teams; a team token lists only its own team. */
  async list(principal: Principal, args: PageArgs): Promise<Page<TeamView>> {
    const em = this.orm.em.fork();
    const where = principal.team
      ? { team: principal.team.id, user: principal.user.id }
      : { user: principal.user.id };
    const page = await findPage(em, TeamMember, where, args, { populate: ['team'] });
    return { ...page, items: page.items.map((m) => ({ team: m.team, role: m.role })) };
  }

  /** A user's membership in a team (with the team), or null; a malformed id finds nothing. */
  async membership(userId: string, teamId: unknown): Promise<TeamMember | null> {
    if (!isUuid(teamId)) return null;
    return this.orm.em.fork().findOne(TeamMember, { team: teamId, user: userId }, { populate: ['team'] });
  }

  /** The membership of the principal's user in a team, or 404 (a foreign team looks missing). */
  async requireRole(principal: Principal, teamId: string, roles: TeamRole[]): Promise<TeamMember> {
    requireUserToken(principal, 'act for another team');
    const membership = await this.membership(principal.user.id, teamId);
    if (!membership) throw AppError.notFound('team');
    if (!roles.includes(membership.role))
      throw new AppError('FORBIDDEN', `only a team ${roles.join(' or ')} can do this`);
    return membership;
  }
}
