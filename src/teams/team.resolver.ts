import { Arg, FieldResolver, ID, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import type { Principal } from '../auth/principal';
import { encodeCursor } from '../common/pagination';
import { CurrentPrincipal, toConnection } from '../graphql/graphql.helpers';
import { TeamService } from './team.service';
import {
  AuditRecordConnection,
  AuditRecordType,
  CreatedTeamInvite,
  CreateTeamInput,
  InviteAnswer,
  InviteAnswerInput,
  InviteToTeamInput,
  TeamConnection,
  TeamInviteConnection,
  TeamInviteType,
  TeamMemberConnection,
  TeamMemberType,
  TeamRoleType,
  TeamType,
} from './team.types';

/** One line each into TeamService, which holds every rule (the role matrix included). */
@Resolver(() => TeamType)
export class TeamResolver {
  constructor(private readonly service: TeamService) {}

  @Query(() => TeamConnection, { description: "The viewer's teams (acting for a team: only that team)." })
  async teams(
    @CurrentPrincipal() principal: Principal,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ) {
    return toConnection(await this.service.list(principal, { first, after }), TeamType.from, (v) =>
      encodeCursor(v.team),
    );
  }

  @Query(() => TeamType, {
    description: "A team the viewer is in, with the viewer's role; others are NOT_FOUND.",
  })
  async team(@CurrentPrincipal() principal: Principal, @Arg('id', () => ID) id: string) {
    return TeamType.from(await this.service.get(principal, id));
  }

  @FieldResolver(() => TeamMemberConnection)
  async members(
    @CurrentPrincipal() principal: Principal,
    @Root() team: TeamType,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ) {
    return toConnection(
      await this.service.members(principal, team.id, { first, after }),
      TeamMemberType.from,
      encodeCursor,
    );
  }

  @FieldResolver(() => TeamInviteConnection, { description: 'Pending invitations (admins and owners).' })
  async invites(
    @CurrentPrincipal() principal: Principal,
    @Root() team: TeamType,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ) {
    return toConnection(
      await this.service.invites(principal, team.id, { first, after }),
      TeamInviteType.from,
      encodeCursor,
    );
  }

  @FieldResolver(() => AuditRecordConnection, { description: 'Newest first (admins and owners).' })
  async auditLog(
    @CurrentPrincipal() principal: Principal,
    @Root() team: TeamType,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
    @Arg('action', () => String, { nullable: true }) action?: string,
    @Arg('actorId', () => ID, { nullable: true }) actorId?: string,
  ) {
    return toConnection(
      await this.service.auditLog(principal, team.id, { action, actorId }, { first, after }),
      AuditRecordType.from,
      encodeCursor,
    );
  }

  @Query(() => TeamInviteConnection, { description: 'Pending invitations addressed to the viewer.' })
  async myInvites(
    @CurrentPrincipal() principal: Principal,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ) {
    return toConnection(
      await this.service.myInvites(principal, { first, after }),
      TeamInviteType.from,
      encodeCursor,
    );
  }

  @Query(() => TeamInviteType, {
    description: 'A usable invitation by its token (the accept page shows it).',
  })
  async inviteByToken(@CurrentPrincipal() _principal: Principal, @Arg('token', () => String) token: string) {
    return TeamInviteType.from(await this.service.inviteByToken(token));
  }

  @Mutation(() => TeamType, { description: 'Creates a team; the creator becomes its owner.' })
  async createTeam(@CurrentPrincipal() principal: Principal, @Arg('input') input: CreateTeamInput) {
    return TeamType.from(await this.service.create(principal, input));
  }

  @Mutation(() => CreatedTeamInvite)
  async inviteToTeam(
    @CurrentPrincipal() principal: Principal,
    @Arg('teamId', () => ID) teamId: string,
    @Arg('input') input: InviteToTeamInput,
  ): Promise<CreatedTeamInvite> {
    const { invite, token, url } = await this.service.invite(principal, teamId, input);
    return { invite: TeamInviteType.from(invite), token, inviteUrl: url };
  }

  @Mutation(() => InviteAnswer)
  async acceptInvite(@CurrentPrincipal() principal: Principal, @Arg('input') input: InviteAnswerInput) {
    return this.answer(principal, input, true);
  }

  @Mutation(() => InviteAnswer)
  async declineInvite(@CurrentPrincipal() principal: Principal, @Arg('input') input: InviteAnswerInput) {
    return this.answer(principal, input, false);
  }

  @Mutation(() => TeamInviteType)
  async revokeInvite(
    @CurrentPrincipal() principal: Principal,
    @Arg('teamId', () => ID) teamId: string,
    @Arg('inviteId', () => ID) inviteId: string,
  ) {
    return TeamInviteType.from(await this.service.revokeInvite(principal, teamId, inviteId));
  }

  @Mutation(() => TeamMemberType)
  async setTeamMemberRole(
    @CurrentPrincipal() principal: Principal,
    @Arg('teamId', () => ID) teamId: string,
    @Arg('userId', () => ID) userId: string,
    @Arg('role', () => TeamRoleType) role: TeamRoleType,
  ) {
    return TeamMemberType.from(await this.service.setRole(principal, teamId, userId, role));
  }

  @Mutation(() => Boolean, { description: 'Removes a member; their team sessions end at once.' })
  async removeTeamMember(
    @CurrentPrincipal() principal: Principal,
    @Arg('teamId', () => ID) teamId: string,
    @Arg('userId', () => ID) userId: string,
  ) {
    await this.service.removeMember(principal, teamId, userId);
    return true;
  }

  @Mutation(() => Boolean, { description: 'Leaves a team (its last owner cannot).' })
  async leaveTeam(@CurrentPrincipal() principal: Principal, @Arg('teamId', () => ID) teamId: string) {
    await this.service.removeMember(principal, teamId, principal.user.id);
    return true;
  }

  @Mutation(() => ID, { description: 'Deletes a team that owns nothing live (owners).' })
  async deleteTeam(@CurrentPrincipal() principal: Principal, @Arg('teamId', () => ID) teamId: string) {
    return this.service.delete(principal, teamId);
  }

  private async answer(
    principal: Principal,
    input: InviteAnswerInput,
    accept: boolean,
  ): Promise<InviteAnswer> {
    const { invite, member } = await this.service.answer(principal, input, accept);
    return { invite: TeamInviteType.from(invite), member: member && TeamMemberType.from(member) };
  }
}
