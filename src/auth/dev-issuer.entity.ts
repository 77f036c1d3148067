import { Entity, Index, PrimaryKey, Property, type Opt } from '@mikro-orm/core';

/** A person registered with the built-in development identity provider. */
@Entity({ tableName: 'dev_accounts' })
export class DevAccount {
  /** Lower-case; also the OIDC subject, so `npm run token -- <username>` names the same user. */
  @PrimaryKey({ type: 'text' })
  username!: string;

  /** `scrypt$<N>$<r>$<p>$<salt>$<hash>` (see password.ts). */
  @Property({ type: 'text' })
  passwordHash!: string;

  @Property({ type: 'text', nullable: true })
  email: string | null = null;

  @Property({ type: 'text', nullable: true })
  name: string | null = null;

  /** Consecutive failed sign-ins; reset by a successful one. */
  @Property({ type: 'integer' })
  failedSignIns: Opt<number> = 0;

  @Property({ type: 'datetime', nullable: true })
  lockedUntil: Date | null = null;

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime', onUpdate: () => new Date() })
  updatedAt: Opt<Date> = new Date();
}

/** oidc-provider's state (sessions, interactions, codes, tokens, grants), one row per model instance. */
@Entity({ tableName: 'oidc_provider_state' })
@Index({ properties: ['model', 'grantId'] })
@Index({ properties: ['model', 'uid'] })
@Index({ properties: ['expiresAt'] })
export class OidcProviderState {
  @PrimaryKey({ type: 'text' })
  model!: string;

  @PrimaryKey({ type: 'text' })
  id!: string;

  @Property({ type: 'jsonb' })
  payload!: Record<string, unknown>;

  @Property({ type: 'text', nullable: true })
  grantId: string | null = null;

  @Property({ type: 'text', nullable: true })
  uid: string | null = null;

  @Property({ type: 'text', nullable: true })
  userCode: string | null = null;

  @Property({ type: 'datetime', nullable: true })
  expiresAt: Date | null = null;

  @Property({ type: 'datetime', nullable: true })
  consumedAt: Date | null = null;
}
