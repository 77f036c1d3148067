import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { AppError } from '../common/errors';
import { isUuid } from '../common/ids';
import { findPage, type Page, type PageArgs } from '../common/pagination';
import { TEAM_ROLES, type Principal, type TeamRole } from '../common/principal';
import type { AuditLog } from './audit.service';
import { AuditRecord, Team, TeamMember } from './team.entity';
import { authorize, forbidden, refuseApiKey, roleAllows, type TeamAction } from './team.roles';

export interface TeamView {
  team: Team;
  role: TeamRole;
  memberCount?: number;
}

export function validateName(name: unknown, field = 'name'): string {
  const trimmed = typeof name === 'string' ? name.trim() : '';
  if (!trimmed) throw AppError.validation({ [field]: 'is required' });
  if (trimmed.length > 100) throw AppError.validation({ [field]: 'must be at most 100 characters' });
  return trimmed;
}

export function validateRole(
  role: unknown,
  field = 'role',
  allowed: readonly TeamRole[] = TEAM_ROLES,
): TeamRole {
  const value = typeof role === 'string' ? role.toLowerCase() : role;
  if (!allowed.includes(value as TeamRole))
    throw AppError.validation({ [field]: `must be one of ${allowed.join(', ')}` });
  return value as TeamRole;
}

/**
 * Teams and their members (invitations: team.invites.ts). Every change asks the role matrix
 * (team.roles.ts) first and writes its audit record in the change's own transaction; reads need
 * only membership (any role reads).
 */
export class TeamService {
  constructor(
    private readonly orm: MikroORM,
    private readonly audit: AuditLog,
  ) {}

  async create(caller: Principal, input: { name: string }): Promise<TeamView> {
    if (caller.team) throw new AppError('FORBIDDEN', 'a team token cannot create teams');
    refuseApiKey(caller, 'create teams');
    const name = validateName(input.name);
    const em = this.orm.em.fork();
    const team = em.create(Team, { name, createdBy: caller.user.id });
    em.create(TeamMember, { team, user: caller.user.id, role: 'owner' });
    this.audit.record(em, caller, team.id, { action: 'team.created', targetType: 'team', targetId: team.id });
    await em.flush();
    return { team, role: 'owner', memberCount: 1 };
  }

  /**
   * A user lists the user's teams. A caller acting for a team lists only that team, with the
   * credential's role: a team key lists it even when its creator has left.
   */
  async list(caller: Principal, args: PageArgs): Promise<Page<TeamView>> {
    const em = this.orm.em.fork();
    if (caller.team) {
      const team = caller.teamRole ? await em.findOne(Team, { id: caller.team.id }) : null;
      const items = team && caller.teamRole && !args.after ? [{ team, role: caller.teamRole }] : [];
      return { items, endCursor: null, hasNextPage: false };
    }
    const page = await findPage(em, TeamMember, { user: caller.user.id }, args, { populate: ['team'] });
    return { ...page, items: page.items.map((m) => ({ team: m.team, role: m.role })) };
  }

  /** A user's membership in a team (with the team), or null; a malformed id finds nothing. */
  async membership(userId: string, teamId: unknown): Promise<TeamMember | null> {
    if (!isUuid(teamId)) return null;
    return this.orm.em.fork().findOne(TeamMember, { team: teamId, user: userId }, { populate: ['team'] });
  }

  /**
   * The team and the caller's role in it, or 404 when the caller is not in it. Acting for a team
   * (session token, team key) the role is the credential's and other teams look missing; acting
   * as a user, it is the user's membership.
   */
  async access(caller: Principal, teamId: unknown, em = this.orm.em.fork()): Promise<TeamView> {
    if (!isUuid(teamId)) throw AppError.notFound('team');
    const id = teamId.toLowerCase();
    if (caller.team) {
      if (caller.team.id !== id || !caller.teamRole) throw AppError.notFound('team');
      const team = await em.findOne(Team, { id });
      if (!team) throw AppError.notFound('team');
      return { team, role: caller.teamRole };
    }
    const member = await em.findOne(TeamMember, { team: id, user: caller.user.id }, { populate: ['team'] });
    if (!member) throw AppError.notFound('team');
    return { team: member.team, role: member.role };
  }

  /** The caller's access to a team, refused (403) below the role `action` needs. */
  async require(
    caller: Principal,
    teamId: unknown,
    action: TeamAction,
    what: string,
    em?: EntityManager,
  ): Promise<TeamView> {
    const view = await this.access(caller, teamId, em);
    authorize({ team: view.team, teamRole: view.role }, action, what);
    return view;
  }

  async get(caller: Principal, teamId: unknown): Promise<TeamView> {
    const em = this.orm.em.fork();
    const view = await this.access(caller, teamId, em);
    return { ...view, memberCount: await em.count(TeamMember, { team: view.team.id }) };
  }

  async members(caller: Principal, teamId: unknown, args: PageArgs): Promise<Page<TeamMember>> {
    const em = this.orm.em.fork();
    const { team } = await this.access(caller, teamId, em);
    return findPage(em, TeamMember, { team: team.id }, args, { populate: ['user'] });
  }

  /**
   * Changes a member's role. Admins change non-owners among viewer, member and admin; only owners
   * make or unmake owners; the last owner stays (409).
   */
  async setRole(caller: Principal, teamId: unknown, userId: unknown, role: unknown): Promise<TeamMember> {
    const next = validateRole(role);
    return this.orm.em.fork().transactional(async (em) => {
      await this.lockTeam(em, teamId);
      const { team, role: mine } = await this.require(caller, teamId, 'manage', 'change roles', em);
      const member = await this.lockedMember(em, team, userId);
      if ((member.role === 'owner' || next === 'owner') && !roleAllows(mine, 'own'))
        throw forbidden(mine, 'make or remove owners');
      if (member.role === next) return member;
      if (member.role === 'owner') await this.keepAnOwner(em, team, 'demote');
      const previous = member.role;
      member.role = next;
      this.audit.record(em, caller, team.id, {
        action: 'member.role_changed',
        targetType: 'user',
        targetId: member.user.id,
        details: { old_role: previous, new_role: next },
      });
      return member;
    });
  }

  /** Removes a member (or, with one's own id, leaves). Their team sessions end on the next request. */
  async removeMember(caller: Principal, teamId: unknown, userId: unknown): Promise<void> {
    await this.orm.em.fork().transactional(async (em) => {
      await this.lockTeam(em, teamId);
      const view = await this.access(caller, teamId, em);
      const member = await this.lockedMember(em, view.team, userId);
      const leaving = member.user.id === caller.user.id && caller.credential !== 'api_key';
      if (!leaving) {
        if (!roleAllows(view.role, 'manage')) throw forbidden(view.role, 'remove members');
        if (member.role === 'owner' && !roleAllows(view.role, 'own'))
          throw forbidden(view.role, 'remove owners');
      }
      if (member.role === 'owner') await this.keepAnOwner(em, view.team, leaving ? 'leave' : 'remove');
      em.remove(member);
      this.audit.record(em, caller, view.team.id, {
        action: leaving ? 'member.left' : 'member.removed',
        targetType: 'user',
        targetId: member.user.id,
        details: { role: member.role },
      });
    });
  }

  /**
   * Deletes a team that owns nothing live any more; otherwise 409 naming what it still owns, so
   * nothing goes by cascade unseen. Its members, invitations and keys go with it.
   */
  async delete(caller: Principal, teamId: unknown): Promise<string> {
    return this.orm.em.fork().transactional(async (em) => {
      await this.lockTeam(em, teamId);
      const { team } = await this.require(caller, teamId, 'own', 'delete the team', em);
      const [owned] = await em.execute<{ media: string; models: string; jobs: string }[]>(
        `select (select count(*) from media_assets where owner_type = 'team' and owner_id = ? and status <> 'deleting') as media,
                (select count(*) from models where owner_type = 'team' and owner_id = ?) as models,
                (select count(*) from jobs where owner_type = 'team' and owner_id = ?
                   and status in ('queued', 'starting', 'running')) as jobs`,
        [team.id, team.id, team.id],
      );
      const left = Object.entries(owned)
        .filter(([, n]) => Number(n) > 0)
        .map(([what, n]) => `${n} ${what === 'jobs' ? 'running jobs' : what}`);
      if (left.length)
        throw new AppError('CONFLICT', `the team still owns ${left.join(', ')}: delete or cancel them first`);
      this.audit.record(em, caller, team.id, {
        action: 'team.deleted',
        targetType: 'team',
        targetId: team.id,
      });
      await em.nativeDelete(Team, { id: team.id });
      return team.id;
    });
  }

  // --- audit

  async auditLog(
    caller: Principal,
    teamId: unknown,
    filter: { action?: string | null; actorId?: string | null },
    args: PageArgs,
  ): Promise<Page<AuditRecord>> {
    const { team } = await this.require(caller, teamId, 'manage', 'read the audit log');
    return this.audit.list(team.id, filter, args);
  }

  /**
   * Locks the team's row before anything else: changes to its members then run one after the
   * other, the later one seeing the earlier's outcome (its caller's role included), and two owners
   * demoting each other cannot lock the member rows in opposite orders (a deadlock).
   */
  private async lockTeam(em: EntityManager, teamId: unknown): Promise<void> {
    if (isUuid(teamId))
      await em.execute('select 1 from teams where id = ? for update', [teamId.toLowerCase()]);
  }

  /** The member row of `userId` in `team`, locked for the change, or 404. */
  private async lockedMember(em: EntityManager, team: Team, userId: unknown): Promise<TeamMember> {
    const member = isUuid(userId)
      ? await em.findOne(
          TeamMember,
          { team: team.id, user: userId.toLowerCase() },
          { lockMode: LockMode.PESSIMISTIC_WRITE, populate: ['user'] },
        )
      : null;
    if (!member) throw AppError.notFound('member');
    return member;
  }

  /** 409 unless another owner stays (the team's row is locked, so two demotions cannot race). */
  private async keepAnOwner(em: EntityManager, team: Team, doing: string): Promise<void> {
    const owners = await em.find(
      TeamMember,
      { team: team.id, role: 'owner' },
      { lockMode: LockMode.PESSIMISTIC_WRITE },
    );
    if (owners.length < 2)
      throw new AppError(
        'CONFLICT',
        `a team keeps at least one owner: make another owner before you ${doing} this one`,
      );
  }
}
