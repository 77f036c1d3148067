import { Entity, Index, ManyToOne, PrimaryKey, Property, type Opt } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { Team } from '../teams/team.entity';
import { User } from '../users/user.entity';

/**
 * A signed-in browser: the `auth_session` cookie. Only the SHA-256 of the cookie value and of the
 * identity provider's refresh token are stored, so a database dump opens no session.
 */
@Entity({ tableName: 'login_sessions' })
export class LoginSession {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'text', unique: true })
  idHash!: string;

  @ManyToOne(() => User, { deleteRule: 'cascade' })
  user!: User;

  @Property({ type: 'text', nullable: true, unique: true })
  refreshTokenHash: string | null = null;

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();

  @Index()
  @Property({ type: 'datetime' })
  expiresAt!: Date;
}

/** A login flow between its start and its callback: what the callback must check. */
@Entity({ tableName: 'login_attempts' })
export class LoginAttempt {
  /** SHA-256 of the `state` parameter. */
  @PrimaryKey({ type: 'text' })
  stateHash!: string;

  @Property({ type: 'text' })
  codeVerifier!: string;

  @Property({ type: 'text' })
  nonce!: string;

  @Property({ type: 'text' })
  redirectUri!: string;

  /** SHA-256 of the binding cookie set on the browser that started the flow (none for API clients). */
  @Property({ type: 'text', nullable: true })
  bindingHash: string | null = null;

  /** A path of this service the browser goes back to after the callback (checked at the start). */
  @Property({ type: 'text', nullable: true })
  returnTo: string | null = null;

  @Index()
  @Property({ type: 'datetime' })
  expiresAt!: Date;
}

/**
 * A short-lived access token the web app got from its session (`POST /api/v1/auth/token`), acting
 * as the user or as one of the user's teams. Only its SHA-256 is stored; ending the session ends it.
 */
@Entity({ tableName: 'session_tokens' })
export class SessionToken {
  @PrimaryKey({ type: 'text' })
  tokenHash!: string;

  @ManyToOne(() => LoginSession, { deleteRule: 'cascade' })
  @Index()
  session!: LoginSession;

  @ManyToOne(() => Team, { deleteRule: 'cascade', nullable: true })
  team: Team | null = null;

  @Index()
  @Property({ type: 'datetime' })
  expiresAt!: Date;
}
