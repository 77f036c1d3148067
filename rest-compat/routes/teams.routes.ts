import { AppError } from '../../src/common/errors';
import {
  AcceptInviteDocument,
  DeclineInviteDocument,
  DeleteTeamDocument,
  GetTeamDocument,
  InviteToTeamDocument,
  ListTeamInvitesDocument,
  ListTeamMembersDocument,
  MyInvitesDocument,
  RemoveTeamMemberDocument,
  RevokeInviteDocument,
  SetTeamMemberRoleDocument,
  TeamAuditLogDocument,
  type TeamRole,
  type RestAuditRecordFragment,
  type RestTeamInviteFragment,
  type RestTeamMemberFragment,
} from '../generated/graphql';
import { body, listResponse, optionalString, pageVariables, queryString } from '../../src/http/http.rest';
import { route } from '../route';
import {
  anything,
  arrayOf,
  enumOf,
  integer,
  isoTime,
  nullable,
  object,
  requestBody,
  string,
  url,
  uuid,
} from '../../src/http/openapi/json-schema';

/** Members, invitations and the audit log of a team (docs/teams.md). */

const ROLES = ['viewer', 'member', 'admin', 'owner'];
const role = enumOf(ROLES);

/** A role of the JSON body as the GraphQL enum; anything else is VALIDATION_FAILED. */
function roleOf(value: unknown, fallback?: TeamRole): TeamRole {
  if (value === undefined && fallback) return fallback;
  if (typeof value !== 'string' || !ROLES.includes(value))
    throw AppError.validation({ role: `must be one of ${ROLES.join(', ')}` });
  return value.toUpperCase() as TeamRole;
}

const memberSchema = object({
  user_id: uuid,
  username: string,
  email: nullable(string),
  name: nullable(string),
  role,
  joined_at: isoTime,
});
const memberJson = (m: RestTeamMemberFragment) => ({
  user_id: m.userId,
  username: m.username,
  email: m.email,
  name: m.name,
  role: m.role.toLowerCase(),
  joined_at: m.joinedAt,
});

const inviteFields = {
  id: uuid,
  team_id: uuid,
  team_name: nullable(string),
  email: nullable(string),
  username: nullable(string),
  role,
  status: enumOf(['pending', 'accepted', 'declined', 'revoked']),
  expires_at: isoTime,
  created_at: isoTime,
  invited_by: object({ user_id: uuid, username: nullable(string) }),
  mail_state: enumOf(['none', 'pending', 'sent', 'failed']),
  mail_error: nullable(string),
};
const inviteSchema = object(inviteFields);
const inviteJson = (i: RestTeamInviteFragment) => ({
  id: i.id,
  team_id: i.teamId,
  team_name: i.teamName,
  email: i.email,
  username: i.username,
  role: i.role.toLowerCase(),
  status: i.status,
  expires_at: i.expiresAt,
  created_at: i.createdAt,
  invited_by: { user_id: i.invitedById, username: i.invitedByUsername },
  mail_state: i.mailState,
  mail_error: i.mailError,
});

const auditSchema = object({
  id: uuid,
  at: isoTime,
  actor: object({
    user_id: nullable(uuid),
    via: enumOf(['session', 'api_key', 'user_token']),
    api_key_id: nullable(uuid),
  }),
  action: string,
  target_type: string,
  target_id: nullable(string),
  details: anything,
  client_address: nullable(string),
  request_id: nullable(string),
});
const auditJson = (r: RestAuditRecordFragment) => ({
  id: r.id,
  at: r.at,
  actor: { user_id: r.actor.userId, via: r.actor.via, api_key_id: r.actor.apiKeyId },
  action: r.action,
  target_type: r.targetType,
  target_id: r.targetId,
  details: r.details,
  client_address: r.clientAddress,
  request_id: r.requestId,
});

const answerBody = requestBody({ token: string, invite_id: uuid });
const answerVariables = (req: Parameters<typeof body>[0]) => {
  const b = body(req);
  return { input: { token: optionalString(b, 'token'), inviteId: optionalString(b, 'invite_id') } };
};
const answerSchema = object({ invite: inviteSchema, member: nullable(memberSchema) });

export const teamRoutes = [
  route({
    method: 'get',
    path: '/api/v1/teams/:team_id',
    summary: 'A team of yours, with your role and its member count',
    response: object({ id: uuid, name: string, role, created_at: isoTime, member_count: integer }),
    document: GetTeamDocument,
    variables: (req) => ({ id: String(req.params.team_id) }),
    respond: ({ team }) => ({
      status: 200,
      body: {
        id: team.id,
        name: team.name,
        role: team.role.toLowerCase(),
        created_at: team.createdAt,
        member_count: team.memberCount,
      },
    }),
  }),
  route({
    method: 'delete',
    path: '/api/v1/teams/:team_id',
    summary: 'Delete a team that owns nothing live (owners; 409 names what it still owns)',
    status: 204,
    document: DeleteTeamDocument,
    variables: (req) => ({ teamId: String(req.params.team_id) }),
    respond: () => ({ status: 204 }),
  }),
  route({
    method: 'get',
    path: '/api/v1/teams/:team_id/members',
    summary: "The team's members and their roles",
    paged: true,
    response: arrayOf(memberSchema),
    document: ListTeamMembersDocument,
    variables: (req) => ({ id: String(req.params.team_id), ...pageVariables(req) }),
    respond: ({ team }, req) => listResponse(req, team.members, memberJson),
  }),
  route({
    method: 'put',
    path: '/api/v1/teams/:team_id/members/:user_id',
    summary: "Change a member's role (admins: non-owners; owners: anyone)",
    request: requestBody({ role }, ['role']),
    response: memberSchema,
    document: SetTeamMemberRoleDocument,
    variables: (req) => ({
      teamId: String(req.params.team_id),
      userId: String(req.params.user_id),
      role: roleOf(body(req).role),
    }),
    respond: ({ setTeamMemberRole }) => ({ status: 200, body: memberJson(setTeamMemberRole) }),
  }),
  route({
    method: 'delete',
    path: '/api/v1/teams/:team_id/members/:user_id',
    summary: 'Remove a member (your own id: leave the team)',
    status: 204,
    document: RemoveTeamMemberDocument,
    variables: (req) => ({ teamId: String(req.params.team_id), userId: String(req.params.user_id) }),
    respond: () => ({ status: 204 }),
  }),
  route({
    method: 'post',
    path: '/api/v1/teams/:team_id/invites',
    summary: 'Invite an email or a username; the token and link are shown only here',
    request: requestBody({ email: string, username: string, role }),
    status: 201,
    response: object(
      {
        id: uuid,
        email: string,
        username: string,
        role,
        status: enumOf(['pending']),
        expires_at: isoTime,
        invite_url: url,
        token: string,
        mail_state: enumOf(['none', 'pending']),
      },
      ['email', 'username'],
    ),
    document: InviteToTeamDocument,
    variables: (req) => {
      const b = body(req);
      return {
        teamId: String(req.params.team_id),
        input: {
          email: optionalString(b, 'email'),
          username: optionalString(b, 'username'),
          role: roleOf(b.role, 'MEMBER'),
        },
      };
    },
    respond: ({ inviteToTeam: { invite, token, inviteUrl } }) => ({
      status: 201,
      body: {
        id: invite.id,
        ...(invite.email ? { email: invite.email } : { username: invite.username }),
        role: invite.role.toLowerCase(),
        status: invite.status,
        expires_at: invite.expiresAt,
        invite_url: inviteUrl,
        token,
        mail_state: invite.mailState,
      },
    }),
  }),
  route({
    method: 'get',
    path: '/api/v1/teams/:team_id/invites',
    summary: "The team's pending invitations (admins and owners; never their tokens)",
    paged: true,
    response: arrayOf(inviteSchema),
    document: ListTeamInvitesDocument,
    variables: (req) => ({ id: String(req.params.team_id), ...pageVariables(req) }),
    respond: ({ team }, req) => listResponse(req, team.invites, inviteJson),
  }),
  route({
    method: 'delete',
    path: '/api/v1/teams/:team_id/invites/:invite_id',
    summary: 'Revoke a pending invitation',
    status: 204,
    document: RevokeInviteDocument,
    variables: (req) => ({ teamId: String(req.params.team_id), inviteId: String(req.params.invite_id) }),
    respond: () => ({ status: 204 }),
  }),
  route({
    method: 'get',
    path: '/api/v1/teams/:team_id/audit',
    summary: "The team's audit log, newest first (admins and owners)",
    paged: true,
    query: {
      action: { description: 'only this action (`member.role_changed`, ...)', schema: string },
      actor: { description: 'only what this user did', schema: uuid },
    },
    response: arrayOf(auditSchema),
    document: TeamAuditLogDocument,
    variables: (req) => ({
      id: String(req.params.team_id),
      ...pageVariables(req),
      action: queryString(req, 'action'),
      actorId: queryString(req, 'actor'),
    }),
    respond: ({ team }, req) => listResponse(req, team.auditLog, auditJson),
  }),
  route({
    method: 'get',
    path: '/api/v1/invites',
    summary: 'The pending invitations addressed to you (verified email or username)',
    paged: true,
    response: arrayOf(inviteSchema),
    document: MyInvitesDocument,
    variables: (req) => pageVariables(req),
    respond: ({ myInvites }, req) => listResponse(req, myInvites, inviteJson),
  }),
  route({
    method: 'post',
    path: '/api/v1/invites/accept',
    summary: 'Accept an invitation (by its token, or the id of one addressed to you)',
    request: answerBody,
    response: answerSchema,
    document: AcceptInviteDocument,
    variables: answerVariables,
    respond: ({ acceptInvite: a }) => ({
      status: 200,
      body: { invite: inviteJson(a.invite), member: a.member ? memberJson(a.member) : null },
    }),
  }),
  route({
    method: 'post',
    path: '/api/v1/invites/decline',
    summary: 'Decline an invitation (by its token, or the id of one addressed to you)',
    request: answerBody,
    response: answerSchema,
    document: DeclineInviteDocument,
    variables: answerVariables,
    respond: ({ declineInvite: a }) => ({
      status: 200,
      body: { invite: inviteJson(a.invite), member: null },
    }),
  }),
];
