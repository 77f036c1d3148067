import { GraphQLJSONObject } from 'graphql-scalars';
import { Field, ID, InputType, Int, ObjectType, registerEnumType } from 'type-graphql';
import { Connection } from '../graphql/graphql.helpers';
import type { AuditRecord, TeamInvite, TeamMember } from './team.entity';
import type { TeamView } from './team.service';

export enum TeamRoleType {
  VIEWER = 'viewer',
  MEMBER = 'member',
  ADMIN = 'admin',
  OWNER = 'owner',
}
registerEnumType(TeamRoleType, {
  name: 'TeamRole',
  description: 'What a member may do in a team (docs/teams.md has the matrix).',
});

@ObjectType('Team', { description: 'An organisation. What is made while acting for it belongs to it.' })
export class TeamType {
  @Field(() => ID)
  id!: string;

  @Field(() => String)
  name!: string;

  @Field(() => TeamRoleType, { description: "The viewer's role in the team." })
  role!: TeamRoleType;

  @Field(() => Date)
  createdAt!: Date;

  @Field(() => Int, { nullable: true, description: 'How many members it has (on `team(id)`).' })
  memberCount!: number | null;

  static from({ team, role, memberCount }: TeamView): TeamType {
    return Object.assign(new TeamType(), {
      id: team.id,
      name: team.name,
      role: role as TeamRoleType,
      createdAt: team.createdAt,
      memberCount: memberCount ?? null,
    });
  }
}

export const TeamConnection = Connection(TeamType, 'Team');

@ObjectType('TeamMember')
export class TeamMemberType {
  @Field(() => ID)
  userId!: string;

  @Field(() => String)
  username!: string;

  @Field(() => String, { nullable: true })
  email!: string | null;

  @Field(() => String, { nullable: true })
  name!: string | null;

  @Field(() => TeamRoleType)
  role!: TeamRoleType;

  @Field(() => Date)
  joinedAt!: Date;

  static from(m: TeamMember): TeamMemberType {
    return Object.assign(new TeamMemberType(), {
      userId: m.user.id,
      username: m.user.username,
      email: m.user.email,
      name: m.user.name,
      role: m.role as TeamRoleType,
      joinedAt: m.createdAt,
    });
  }
}

export const TeamMemberConnection = Connection(TeamMemberType, 'TeamMember');

@ObjectType('TeamInvite', {
  description: 'An invitation to a team. Its token is shown only when it is made.',
})
export class TeamInviteType {
  @Field(() => ID)
  id!: string;

  @Field(() => ID)
  teamId!: string;

  @Field(() => String, { nullable: true })
  teamName!: string | null;

  @Field(() => String, { nullable: true })
  email!: string | null;

  @Field(() => String, { nullable: true })
  username!: string | null;

  @Field(() => TeamRoleType)
  role!: TeamRoleType;

  @Field(() => String, { description: '`pending`, `accepted`, `declined` or `revoked`.' })
  status!: string;

  @Field(() => Date)
  expiresAt!: Date;

  @Field(() => Date)
  createdAt!: Date;

  @Field(() => ID)
  invitedById!: string;

  @Field(() => String, { nullable: true })
  invitedByUsername!: string | null;

  @Field(() => String, { description: 'The mail: `none` (no SMTP_URL), `pending`, `sent` or `failed`.' })
  mailState!: string;

  @Field(() => String, { nullable: true, description: 'Why the last sending failed (it is retried).' })
  mailError!: string | null;

  static from(i: TeamInvite): TeamInviteType {
    // team and invitedBy are populated where names are shown; a bare reference has no name.
    return Object.assign(new TeamInviteType(), {
      id: i.id,
      teamId: i.team.id,
      teamName: (i.team.name as string | undefined) ?? null,
      email: i.email,
      username: i.username,
      role: i.role as TeamRoleType,
      status: i.status,
      expiresAt: i.expiresAt,
      createdAt: i.createdAt,
      invitedById: i.invitedBy.id,
      invitedByUsername: (i.invitedBy.username as string | undefined) ?? null,
      mailState: i.mailState,
      mailError: i.mailError,
    });
  }
}

export const TeamInviteConnection = Connection(TeamInviteType, 'TeamInvite');

@ObjectType()
export class CreatedTeamInvite {
  @Field(() => TeamInviteType)
  invite!: TeamInviteType;

  @Field(() => String, { description: 'The invitation token. Pass it on now: it cannot be shown again.' })
  token!: string;

  @Field(() => String, { description: 'The link that accepts it (`/invites/accept?token=...`).' })
  inviteUrl!: string;
}

@ObjectType()
export class InviteAnswer {
  @Field(() => TeamInviteType)
  invite!: TeamInviteType;

  @Field(() => TeamMemberType, { nullable: true, description: 'The new membership, when accepted.' })
  member!: TeamMemberType | null;
}

@ObjectType('AuditActor')
export class AuditActorType {
  @Field(() => ID, { nullable: true })
  userId!: string | null;

  @Field(() => String, { description: '`session`, `api_key` or `user_token`.' })
  via!: string;

  @Field(() => ID, { nullable: true })
  apiKeyId!: string | null;
}

@ObjectType('AuditRecord', { description: 'One change to a team or action taken for it.' })
export class AuditRecordType {
  @Field(() => ID)
  id!: string;

  @Field(() => Date)
  at!: Date;

  @Field(() => AuditActorType)
  actor!: AuditActorType;

  @Field(() => String, { description: 'Dotted, such as `member.role_changed`.' })
  action!: string;

  @Field(() => String)
  targetType!: string;

  @Field(() => ID, { nullable: true })
  targetId!: string | null;

  @Field(() => GraphQLJSONObject)
  details!: Record<string, unknown>;

  @Field(() => String, { nullable: true })
  clientAddress!: string | null;

  @Field(() => String, { nullable: true })
  requestId!: string | null;

  static from(r: AuditRecord): AuditRecordType {
    return Object.assign(new AuditRecordType(), {
      id: r.id,
      at: r.createdAt,
      actor: Object.assign(new AuditActorType(), {
        userId: r.actorUserId,
        via: r.actorVia,
        apiKeyId: r.actorApiKeyId,
      }),
      action: r.action,
      targetType: r.targetType,
      targetId: r.targetId,
      details: r.details,
      clientAddress: r.clientAddress,
      requestId: r.requestId,
    });
  }
}

export const AuditRecordConnection = Connection(AuditRecordType, 'AuditRecord');

@InputType()
export class CreateTeamInput {
  @Field(() => String)
  name!: string;
}

@InputType()
export class InviteToTeamInput {
  @Field(() => String, { nullable: true, description: 'Exactly one of email and username.' })
  email?: string | null;

  @Field(() => String, { nullable: true })
  username?: string | null;

  @Field(() => TeamRoleType, { nullable: true, description: '`member` when left out.' })
  role?: TeamRoleType | null;
}

@InputType()
export class InviteAnswerInput {
  @Field(() => String, { nullable: true, description: 'The token of the link.' })
  token?: string | null;

  @Field(() => ID, { nullable: true, description: 'Or the id of an invitation addressed to you.' })
  inviteId?: string | null;
}
