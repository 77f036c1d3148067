import { createHash, randomBytes } from 'node:crypto';
import { LockMode, UniqueConstraintViolationException, type FilterQuery } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { AppError } from '../common/errors';
import { isUuid } from '../common/ids';
import { findPage, type Page, type PageArgs } from '../common/pagination';
import { User } from '../users/user.entity';
import type { AuditLog } from './audit.service';
import { AuditRecord, Team, TEAM_ROLES, TeamInvite, TeamMember, type TeamRole } from './team.entity';
import { authorize, forbidden, roleAllows, type TeamCaller } from './team.roles';

export interface TeamView {
  team: Team;
  role: TeamRole;
  memberCount?: number;
}

export interface TeamSettings {
  publicUrl: string;
  inviteTtlHours: number;
  /** Whether invitations are mailed (SMTP_URL is set): the worker sends them. */
  mail: boolean;
}

/** A mail the worker sends for an invitation (the queue keeps the link only until it is sent). */
export const INVITE_MAIL_TASK = 'team-invite-mail';

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

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

function refuseApiKey(caller: TeamCaller, what: string): void {
  if (caller.credential === 'api_key') throw new AppError('FORBIDDEN', `an API key cannot ${what}`);
}

/** A pending invitation is usable until it expires; a used, revoked or expired one looks missing. */
const usable = (invite: TeamInvite | null): invite is TeamInvite =>
  !!invite && invite.status === 'pending' && invite.expiresAt.getTime() > Date.now();

/**
 * Teams, their members and invitations. Every method asks the role matrix (team.roles.ts) first;
 * every change writes its audit record in its own transaction.
 */
export class TeamService {
  constructor(
    private readonly orm: MikroORM,
    private readonly audit: AuditLog,
    private readonly settings: TeamSettings,
  ) {}

  async create(caller: TeamCaller, input: { name: string }): Promise<TeamView> {
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

  /** A user lists the user's teams; a caller acting for a team lists only that team. */
  async list(caller: TeamCaller, args: PageArgs): Promise<Page<TeamView>> {
    const em = this.orm.em.fork();
    const where = caller.team ? { team: caller.team.id, user: caller.user.id } : { user: caller.user.id };
    const page = await findPage(em, TeamMember, where, args, { populate: ['team'] });
    return {
      ...page,
      items: page.items.map((m) => ({
        team: m.team,
        role: caller.team ? (caller.teamRole ?? m.role) : m.role,
      })),
    };
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
  async access(caller: TeamCaller, teamId: unknown, em = this.orm.em.fork()): Promise<TeamView> {
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
    caller: TeamCaller,
    teamId: unknown,
    action: Parameters<typeof authorize>[1],
    what: string,
    em?: EntityManager,
  ): Promise<TeamView> {
    const view = await this.access(caller, teamId, em);
    if (!roleAllows(view.role, action)) throw forbidden(view.role, what);
    return view;
  }

  async get(caller: TeamCaller, teamId: unknown): Promise<TeamView> {
    const em = this.orm.em.fork();
    const view = await this.access(caller, teamId, em);
    return { ...view, memberCount: await em.count(TeamMember, { team: view.team.id }) };
  }

  async members(caller: TeamCaller, teamId: unknown, args: PageArgs): Promise<Page<TeamMember>> {
    const em = this.orm.em.fork();
    const { team } = await this.access(caller, teamId, em);
    return findPage(em, TeamMember, { team: team.id }, args, { populate: ['user'] });
  }

  /**
   * Changes a member's role. Admins change non-owners among viewer, member and admin; only owners
   * make or unmake owners; the last owner stays (409).
   */
  async setRole(caller: TeamCaller, teamId: unknown, userId: unknown, role: unknown): Promise<TeamMember> {
    const next = validateRole(role);
    return this.orm.em.fork().transactional(async (em) => {
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
  async removeMember(caller: TeamCaller, teamId: unknown, userId: unknown): Promise<void> {
    await this.orm.em.fork().transactional(async (em) => {
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
  async delete(caller: TeamCaller, teamId: unknown): Promise<string> {
    return this.orm.em.fork().transactional(async (em) => {
      const { team } = await this.require(caller, teamId, 'own', 'delete the team', em);
      await em.findOne(Team, { id: team.id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
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

  // --- invitations

  /** Invites an email or a username; the token is shown once, only its hash is kept. */
  async invite(
    caller: TeamCaller,
    teamId: unknown,
    input: { email?: string | null; username?: string | null; role?: string | null },
  ): Promise<{ invite: TeamInvite; token: string; url: string }> {
    const role = validateRole(input.role ?? 'member');
    const email = typeof input.email === 'string' ? input.email.trim().toLowerCase() : '';
    const username = typeof input.username === 'string' ? input.username.trim() : '';
    if (!email === !username) throw AppError.validation({ email: 'give exactly one of email and username' });
    if (email && !/^[^\s@]+@[^\s@]+$/.test(email))
      throw AppError.validation({ email: 'is not an email address' });
    const token = randomBytes(32).toString('base64url');
    const url = `${this.settings.publicUrl}/invites/accept?token=${token}`;
    const invite = await this.orm.em.fork().transactional(async (em) => {
      const { team, role: mine } = await this.require(caller, teamId, 'manage', 'invite members', em);
      if (role === 'owner' && !roleAllows(mine, 'own')) throw forbidden(mine, 'invite owners');
      const already = await em.count(TeamMember, {
        team: team.id,
        user: email ? { email, emailVerified: true } : { username },
      });
      if (already) throw new AppError('CONFLICT', 'this person is already in the team');
      const created = em.create(TeamInvite, {
        team,
        email: email || null,
        username: username || null,
        role,
        tokenHash: sha256(token),
        invitedBy: caller.user.id,
        mailState: email && this.settings.mail ? 'pending' : 'none',
        expiresAt: new Date(Date.now() + this.settings.inviteTtlHours * 3_600_000),
      });
      this.audit.record(em, caller, team.id, {
        action: 'member.invited',
        targetType: 'invite',
        targetId: created.id,
        details: { role, ...(email ? { email } : { username }) },
      });
      await em.flush();
      // Queued with the invitation: the mail goes (and is retried) whatever happens to this request.
      if (created.mailState === 'pending')
        await em.execute(
          `select graphile_worker.add_job(?, json_build_object('inviteId', ?::text, 'url', ?::text), max_attempts => 8)`,
          [INVITE_MAIL_TASK, created.id, url],
        );
      return created;
    });
    return { invite, token, url };
  }

  async invites(caller: TeamCaller, teamId: unknown, args: PageArgs): Promise<Page<TeamInvite>> {
    const em = this.orm.em.fork();
    const { team } = await this.require(caller, teamId, 'manage', 'see invitations', em);
    return findPage(
      em,
      TeamInvite,
      { team: team.id, status: 'pending', expiresAt: { $gt: new Date() } },
      args,
      {
        populate: ['invitedBy'],
      },
    );
  }

  async revokeInvite(caller: TeamCaller, teamId: unknown, inviteId: unknown): Promise<TeamInvite> {
    return this.orm.em.fork().transactional(async (em) => {
      const { team, role } = await this.require(caller, teamId, 'manage', 'revoke invitations', em);
      const invite = isUuid(inviteId)
        ? await em.findOne(
            TeamInvite,
            { id: inviteId.toLowerCase(), team: team.id },
            { lockMode: LockMode.PESSIMISTIC_WRITE },
          )
        : null;
      if (!usable(invite)) throw AppError.notFound('invitation');
      if (invite.role === 'owner' && !roleAllows(role, 'own'))
        throw forbidden(role, 'revoke an invitation of an owner');
      invite.status = 'revoked';
      invite.answeredAt = new Date();
      this.audit.record(em, caller, team.id, {
        action: 'invite.revoked',
        targetType: 'invite',
        targetId: invite.id,
      });
      return invite;
    });
  }

  /** The pending invitations addressed to the caller (by verified email or by username). */
  async myInvites(caller: TeamCaller, args: PageArgs): Promise<Page<TeamInvite>> {
    refuseApiKey(caller, 'read invitations');
    const user = caller.user;
    const to: FilterQuery<TeamInvite>[] = [{ username: user.username }];
    if (user.email && user.emailVerified) to.push({ email: user.email.toLowerCase() });
    return findPage<TeamInvite>(
      this.orm.em.fork(),
      TeamInvite,
      { $or: to, status: 'pending', expiresAt: { $gt: new Date() } },
      args,
      { populate: ['team', 'invitedBy'] },
    );
  }

  /** An invitation seen through its token (the accept page shows it before the answer). */
  async inviteByToken(token: unknown): Promise<TeamInvite> {
    const invite =
      typeof token === 'string' && token
        ? await this.orm.em
            .fork()
            .findOne(TeamInvite, { tokenHash: sha256(token) }, { populate: ['team', 'invitedBy'] })
        : null;
    if (!usable(invite)) throw AppError.notFound('invitation');
    return invite;
  }

  /**
   * Accepts or declines, by token or (for one addressed to the caller) by id. Only the person it is
   * addressed to may answer; anyone else gets 403 and the invitation stays usable. Used once.
   */
  async answer(
    caller: TeamCaller,
    input: { token?: string | null; inviteId?: string | null },
    accept: boolean,
  ): Promise<{ invite: TeamInvite; member: TeamMember | null }> {
    refuseApiKey(caller, 'answer invitations');
    return this.orm.em.fork().transactional(async (em) => {
      const where = input.token
        ? { tokenHash: sha256(input.token) }
        : isUuid(input.inviteId)
          ? { id: input.inviteId.toLowerCase() }
          : null;
      if (!where) throw AppError.validation({ token: 'give the token or the invite_id' });
      const invite = await em.findOne(TeamInvite, where, {
        lockMode: LockMode.PESSIMISTIC_WRITE,
      });
      if (!usable(invite)) throw AppError.notFound('invitation');
      const user = await em.findOneOrFail(User, { id: caller.user.id });
      const addressed =
        (invite.email !== null && user.emailVerified && user.email?.toLowerCase() === invite.email) ||
        (invite.username !== null && user.username === invite.username);
      if (!addressed) {
        // By id, someone else's invitation looks missing; by token, the holder learns it is not theirs.
        if (!input.token) throw AppError.notFound('invitation');
        throw new AppError('FORBIDDEN', 'this invitation is addressed to someone else; sign in as them');
      }
      await em.populate(invite, ['team', 'invitedBy']);
      const teamId = invite.team.id;
      let member: TeamMember | null = null;
      if (accept) {
        if (await em.count(TeamMember, { team: teamId, user: user.id }))
          throw new AppError('CONFLICT', 'you are already in this team');
        member = em.create(TeamMember, { team: teamId, user: user.id, role: invite.role });
      }
      invite.status = accept ? 'accepted' : 'declined';
      invite.answeredAt = new Date();
      this.audit.record(em, caller, teamId, {
        action: accept ? 'invite.accepted' : 'invite.declined',
        targetType: 'invite',
        targetId: invite.id,
        details: { role: invite.role },
      });
      try {
        await em.flush();
      } catch (err) {
        if (err instanceof UniqueConstraintViolationException)
          throw new AppError('CONFLICT', 'you are already in this team');
        throw err;
      }
      if (member) await em.populate(member, ['user']);
      return { invite, member };
    });
  }

  /** Records the outcome of the invitation's mail (the worker's task). */
  async noteMail(inviteId: string, state: 'sent' | 'failed', error: string | null): Promise<void> {
    await this.orm.em
      .fork()
      .nativeUpdate(TeamInvite, { id: inviteId }, { mailState: state, mailError: error });
  }

  /** What the mail task needs to write the mail. */
  async inviteForMail(inviteId: string): Promise<TeamInvite | null> {
    return this.orm.em.fork().findOne(TeamInvite, { id: inviteId }, { populate: ['team', 'invitedBy'] });
  }

  // --- audit

  async auditLog(
    caller: TeamCaller,
    teamId: unknown,
    filter: { action?: string | null; actorId?: string | null },
    args: PageArgs,
  ): Promise<Page<AuditRecord>> {
    const { team } = await this.require(caller, teamId, 'manage', 'read the audit log');
    return this.audit.list(team.id, filter, args);
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

  /** 409 unless another owner stays; the owners' rows are locked so two demotions cannot race. */
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
