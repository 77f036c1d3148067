import { Entity, Index, ManyToOne, PrimaryKey, Property, Unique, type Opt } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { TeamRole } from '../common/principal';
import { User } from '../users/user.entity';

/** An organisation. Resources created for a team (its keys, its members' team sessions) are owned by it. */
@Entity({ tableName: 'teams' })
export class Team {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'text' })
  name!: string;

  @ManyToOne(() => User, { deleteRule: 'restrict' })
  createdBy!: User;

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();
}

@Entity({ tableName: 'team_members' })
@Unique({ properties: ['team', 'user'] })
export class TeamMember {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Team, { deleteRule: 'cascade' })
  team!: Team;

  @ManyToOne(() => User, { deleteRule: 'cascade' })
  @Index()
  user!: User;

  @Property({ type: 'text' })
  role: Opt<TeamRole> = 'member';

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();
}

export type InviteStatus = 'pending' | 'accepted' | 'declined' | 'revoked';
/** `none`: no SMTP_URL, the inviter passes the link on; `pending`: the worker is sending it. */
export type InviteMailState = 'none' | 'pending' | 'sent' | 'failed';

/** An invitation to a team, addressed to a verified email or to one user (named by username). Only the token's SHA-256 is kept. */
@Entity({ tableName: 'team_invites' })
@Index({ properties: ['team', 'status'] })
export class TeamInvite {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Team, { deleteRule: 'cascade' })
  team!: Team;

  @Index()
  @Property({ type: 'text', nullable: true })
  email: string | null = null;

  /** As the inviter wrote it (shown); the invitation is the resolved user's, `inviteeUser`. */
  @Index()
  @Property({ type: 'text', nullable: true })
  username: string | null = null;

  /** Who an invitation by username is for, resolved when it is made: usernames are not unique. */
  @ManyToOne(() => User, { deleteRule: 'cascade', nullable: true, index: true })
  inviteeUser: User | null = null;

  @Property({ type: 'text' })
  role!: TeamRole;

  @Property({ type: 'text', unique: true })
  tokenHash!: string;

  @ManyToOne(() => User, { deleteRule: 'cascade' })
  invitedBy!: User;

  @Property({ type: 'text' })
  status: Opt<InviteStatus> = 'pending';

  @Property({ type: 'text' })
  mailState: Opt<InviteMailState> = 'none';

  @Property({ type: 'text', nullable: true })
  mailError: string | null = null;

  @Property({ type: 'datetime' })
  expiresAt!: Date;

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime', nullable: true })
  answeredAt: Date | null = null;
}

/** `system`: the service itself (a budget threshold crossed). */
export type AuditVia = 'session' | 'api_key' | 'user_token' | 'system';

/**
 * What was done to or for a team, by whom, written in the transaction of the change itself. No API
 * changes or deletes one; the sweeper drops those older than AUDIT_RETENTION_DAYS.
 */
@Entity({ tableName: 'team_audit' })
@Index({ name: 'team_audit_team_created_at_id_index', properties: ['teamId', 'createdAt', 'id'] })
export class AuditRecord {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  /** Not a foreign key: the record outlives the team it tells about. */
  @Property({ type: 'uuid' })
  teamId!: string;

  /**
   * When it happened (`at` in the API; named so for the pager). The sweeper's index is a BRIN
   * (records come in time order): a btree on the time alone would offer the planner the list's
   * order for every team at once, and it took it, reading other teams' records by the thousand.
   */
  @Index({
    name: 'team_audit_created_at_brin',
    expression: 'create index "team_audit_created_at_brin" on "team_audit" using brin ("created_at")',
  })
  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'uuid', nullable: true })
  actorUserId: string | null = null;

  @Property({ type: 'text' })
  actorVia!: AuditVia;

  @Property({ type: 'uuid', nullable: true })
  actorApiKeyId: string | null = null;

  @Property({ type: 'text' })
  action!: string;

  @Property({ type: 'text' })
  targetType!: string;

  @Property({ type: 'text', nullable: true })
  targetId: string | null = null;

  @Property({ type: 'json' })
  details: Opt<Record<string, unknown>> = {};

  @Property({ type: 'text', nullable: true })
  clientAddress: string | null = null;

  @Property({ type: 'text', nullable: true })
  requestId: string | null = null;
}
