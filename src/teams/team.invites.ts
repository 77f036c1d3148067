import { createHash, randomBytes } from 'node:crypto';
import { LockMode, UniqueConstraintViolationException, type FilterQuery } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { AppError } from '../common/errors';
import { isUuid } from '../common/ids';
import { findPage, type Page, type PageArgs } from '../common/pagination';
import type { Principal } from '../common/principal';
import { User } from '../users/user.entity';
import type { AuditLog } from './audit.service';
import { TeamInvite, TeamMember } from './team.entity';
import { forbidden, refuseApiKey, roleAllows } from './team.roles';
import { validateRole, type TeamService } from './team.service';

export interface InviteSettings {
  publicUrl: string;
  inviteTtlHours: number;
  /** Whether invitations are mailed (SMTP_URL is set): the worker sends them. */
  mail: boolean;
}

/** A mail the worker sends for an invitation (the queue keeps the link only until it is sent). */
export const INVITE_MAIL_TASK = 'team-invite-mail';

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

/** A pending invitation is usable until it expires; a used, revoked or expired one looks missing. */
const usable = (invite: TeamInvite | null): invite is TeamInvite =>
  !!invite && invite.status === 'pending' && invite.expiresAt.getTime() > Date.now();

/** Whether the invitation is addressed to `user`: the resolved user, or a verified email. */
const addressedTo = (invite: TeamInvite, user: User): boolean =>
  (invite.inviteeUser !== null && invite.inviteeUser.id === user.id) ||
  (invite.email !== null && user.emailVerified && user.email?.toLowerCase() === invite.email);

/**
 * Invitations to a team: made by its admins and owners (TeamService's role check), answered by
 * the one person each is addressed to. Each change writes its audit record in its transaction.
 */
export class InviteService {
  constructor(
    private readonly orm: MikroORM,
    private readonly audit: AuditLog,
    private readonly teams: TeamService,
    private readonly settings: InviteSettings,
  ) {}

  /**
   * Invites an email or a username; the token is shown once, only its hash is kept. A username is
   * resolved to its user now (usernames are not unique): one nobody has is 404, one that several
   * people have is 409, so an invitation never reaches someone who merely shares the name.
   */
  async invite(
    caller: Principal,
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
      const { team, role: mine } = await this.teams.require(caller, teamId, 'manage', 'invite members', em);
      if (role === 'owner' && !roleAllows(mine, 'own')) throw forbidden(mine, 'invite owners');
      let invitee: User | null = null;
      if (username) {
        const named = await em.find(User, { username }, { limit: 2 });
        if (!named.length) throw AppError.notFound(`user with username ${JSON.stringify(username)}`);
        if (named.length > 1)
          throw new AppError(
            'CONFLICT',
            `more than one user has the username ${JSON.stringify(username)}: invite by email instead`,
          );
        invitee = named[0];
      }
      const already = await em.count(TeamMember, {
        team: team.id,
        user: invitee ? invitee.id : { email, emailVerified: true },
      });
      if (already) throw new AppError('CONFLICT', 'this person is already in the team');
      const created = em.create(TeamInvite, {
        team,
        email: email || null,
        username: username || null,
        inviteeUser: invitee,
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

  async list(caller: Principal, teamId: unknown, args: PageArgs): Promise<Page<TeamInvite>> {
    const em = this.orm.em.fork();
    const { team } = await this.teams.require(caller, teamId, 'manage', 'see invitations', em);
    return findPage(
      em,
      TeamInvite,
      { team: team.id, status: 'pending', expiresAt: { $gt: new Date() } },
      args,
      { populate: ['invitedBy'] },
    );
  }

  async revoke(caller: Principal, teamId: unknown, inviteId: unknown): Promise<TeamInvite> {
    return this.orm.em.fork().transactional(async (em) => {
      const { team, role } = await this.teams.require(caller, teamId, 'manage', 'revoke invitations', em);
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
        details: { role: invite.role },
      });
      return invite;
    });
  }

  /** The pending invitations addressed to the caller (as the resolved user, or by verified email). */
  async mine(caller: Principal, args: PageArgs): Promise<Page<TeamInvite>> {
    refuseApiKey(caller, 'read invitations');
    const user = caller.user;
    const to: FilterQuery<TeamInvite>[] = [{ inviteeUser: user.id }];
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
  async byToken(token: unknown): Promise<TeamInvite> {
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
    caller: Principal,
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
      const invite = await em.findOne(TeamInvite, where, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if (!usable(invite)) throw AppError.notFound('invitation');
      const user = await em.findOneOrFail(User, { id: caller.user.id });
      if (!addressedTo(invite, user)) {
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
  async forMail(inviteId: string): Promise<TeamInvite | null> {
    return this.orm.em.fork().findOne(TeamInvite, { id: inviteId }, { populate: ['team', 'invitedBy'] });
  }
}
