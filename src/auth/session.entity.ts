import { Entity, Index, ManyToOne, PrimaryKey, Property, type Opt } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
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

  @Index()
  @Property({ type: 'datetime' })
  expiresAt!: Date;
}
