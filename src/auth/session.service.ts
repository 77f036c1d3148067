import { createHash, randomBytes } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { AppError } from '../common/errors';
import { TeamMember, type TeamRole } from '../teams/team.entity';
import type { User } from '../users/user.entity';
import { LoginAttempt, LoginSession, SessionToken } from './session.entity';
import { sweeper } from './sweeper';

export const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');
export const randomToken = () => randomBytes(32).toString('base64url');

const SWEEP_INTERVAL_MS = 5 * 60_000;
/** Marks the web app's session tokens, so the authenticator knows where to look them up. */
export const SESSION_TOKEN_PREFIX = 'mps_';
/** How long a started login may take to come back to the callback. */
export const LOGIN_ATTEMPT_TTL_MS = 10 * 60_000;

/** Login sessions (the `auth_session` cookie) in PostgreSQL; expired ones are refused, then swept. */
export class SessionService {
  private readonly sweep: () => void;

  constructor(
    private readonly orm: MikroORM,
    private readonly ttlSeconds: number,
    private readonly tokenTtlSeconds: number,
  ) {
    this.sweep = sweeper(SWEEP_INTERVAL_MS, async () => {
      const em = this.orm.em.fork();
      await em.nativeDelete(SessionToken, { expiresAt: { $lt: new Date() } });
      await em.nativeDelete(LoginSession, { expiresAt: { $lt: new Date() } });
      await em.nativeDelete(LoginAttempt, { expiresAt: { $lt: new Date() } });
    });
  }

  /** Opens a session; the returned value is the cookie, only its hash is kept. */
  async open(user: User, refreshToken: string | null): Promise<string> {
    this.sweep();
    const value = randomToken();
    const em = this.orm.em.fork();
    em.create(LoginSession, {
      idHash: sha256(value),
      user: user.id,
      refreshTokenHash: refreshToken ? sha256(refreshToken) : null,
      expiresAt: new Date(Date.now() + this.ttlSeconds * 1000),
    });
    await em.flush();
    return value;
  }

  /** The live session of a cookie value, with its user. */
  async byCookie(value: string | undefined): Promise<LoginSession> {
    return this.live(value ? { idHash: sha256(value) } : null, 'no session: sign in at /api/v1/auth/login');
  }

  /** The live session a refresh token was issued to. */
  async byRefreshToken(refreshToken: string): Promise<LoginSession> {
    return this.live(
      { refreshTokenHash: sha256(refreshToken) },
      'unknown refresh token, or its session ended',
    );
  }

  /** Records the provider's new refresh token after a rotation. */
  async rotate(session: LoginSession, refreshToken: string): Promise<void> {
    await this.orm.em
      .fork()
      .nativeUpdate(LoginSession, { id: session.id }, { refreshTokenHash: sha256(refreshToken) });
  }

  async end(where: { cookie?: string; refreshToken?: string }): Promise<void> {
    const em = this.orm.em.fork();
    if (where.cookie) await em.nativeDelete(LoginSession, { idHash: sha256(where.cookie) });
    if (where.refreshToken)
      await em.nativeDelete(LoginSession, { refreshTokenHash: sha256(where.refreshToken) });
  }

  /**
   * A short-lived access token of a live session, acting as its user or as `team` (membership is
   * checked by the caller). It never outlives the session. Only its hash is kept.
   */
  async issueToken(
    session: LoginSession,
    teamId: string | null,
  ): Promise<{ value: string; expiresAt: Date }> {
    this.sweep();
    const value = `${SESSION_TOKEN_PREFIX}${randomToken()}`;
    const expiresAt = new Date(
      Math.min(Date.now() + this.tokenTtlSeconds * 1000, session.expiresAt.getTime()),
    );
    const em = this.orm.em.fork();
    em.create(SessionToken, { tokenHash: sha256(value), session: session.id, team: teamId, expiresAt });
    await em.flush();
    return { value, expiresAt };
  }

  /**
   * The live token of a value, with its session's user, its team and the user's role in it now;
   * null when unknown or expired.
   */
  async byToken(value: string): Promise<{ token: SessionToken; role: TeamRole | null } | null> {
    const now = new Date();
    const em = this.orm.em.fork();
    const token = await em.findOne(
      SessionToken,
      { tokenHash: sha256(value), expiresAt: { $gt: now }, session: { expiresAt: { $gt: now } } },
      { populate: ['session.user', 'team'] },
    );
    if (!token) return null;
    if (!token.team) return { token, role: null };
    // Acting as a team lasts only while the user is still one of its members, with the role held now.
    const member = await em.findOne(
      TeamMember,
      { team: token.team.id, user: token.session.user.id },
      { fields: ['role'] },
    );
    return member ? { token, role: member.role } : null;
  }

  /** Keeps what the callback must check until the flow returns (LOGIN_ATTEMPT_TTL_MS at most). */
  async saveAttempt(
    attempt: Omit<LoginAttempt, 'stateHash' | 'expiresAt'> & { state: string },
  ): Promise<void> {
    this.sweep();
    const { state, ...rest } = attempt;
    const em = this.orm.em.fork();
    em.create(LoginAttempt, {
      ...rest,
      stateHash: sha256(state),
      expiresAt: new Date(Date.now() + 10 * 60_000),
    });
    await em.flush();
  }

  /** Takes the attempt of a `state` once: a second callback with the same state finds nothing. */
  async takeAttempt(state: string): Promise<LoginAttempt | null> {
    const rows = await this.orm.em
      .fork()
      .getConnection()
      .execute<Record<string, unknown>[]>(
        'delete from login_attempts where state_hash = ? and expires_at > now() returning *',
        [sha256(state)],
      );
    if (!rows.length) return null;
    return this.orm.em.fork().map(LoginAttempt, rows[0]);
  }

  private async live(
    where: Partial<Pick<LoginSession, 'idHash' | 'refreshTokenHash'>> | null,
    message: string,
  ) {
    const session = where
      ? await this.orm.em
          .fork()
          .findOne(LoginSession, { ...where, expiresAt: { $gt: new Date() } }, { populate: ['user'] })
      : null;
    if (!session) throw new AppError('UNAUTHENTICATED', message);
    return session;
  }
}
