import { createClient } from 'graphql-ws';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import WebSocket from 'ws';
import { User } from '../src/users/user.entity';
import { AuditRecord, TeamInvite } from '../src/teams/team.entity';
import { startTestApp, type TestApp } from './helpers/app';
import { deploy, programModel, waitForJob } from './helpers/jobs';
import { pngBytes, until, uploadFile } from './helpers/media';

/** Issue 29: roles, members, invitations, team keys and the audit log (docs/teams.md). */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ LOCAL_EXECUTOR_TRUST: 'any', SUBSCRIPTION_AUTH_RECHECK_SECONDS: '1' });
});
afterAll(() => t.close());

type Role = 'viewer' | 'member' | 'admin' | 'owner';
const ROLES: Role[] = ['viewer', 'member', 'admin', 'owner'];
const bearer = (v: string) => `Bearer ${v}`;
let seq = 0;

/** A user token for a fresh person with a verified email. */
async function person(
  name: string,
): Promise<{ sub: string; username: string; email: string; token: string }> {
  const sub = `${name}-${++seq}`;
  const email = `${sub}@x.test`;
  const token = bearer(await t.tokenFor(sub, { preferred_username: sub, email, email_verified: true }));
  await t.gql('{ me { id } }', {}, token); // the user exists from the first request on
  return { sub, username: sub, email, token };
}

const codeOf = (res: { body: { errors?: { extensions?: { code?: string } }[] } }) =>
  res.body.errors?.[0]?.extensions?.code ?? null;

async function ok<T = Record<string, unknown>>(
  query: string,
  variables: Record<string, unknown>,
  auth: string,
) {
  const res = await t.gql(query, variables, auth);
  if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
  return res.body.data as T;
}

async function userId(sub: string): Promise<string> {
  return (await t.runtime.orm.em.fork().findOneOrFail(User, { subject: sub })).id;
}

/** The web app's session token acting for `teamId`, opened through the session service itself. */
async function sessionFor(sub: string, teamId: string | null): Promise<string> {
  const user = await t.runtime.orm.em.fork().findOneOrFail(User, { subject: sub });
  const cookie = await t.runtime.services.sessions.open(user, null);
  const { accessToken } = await t.runtime.services.login.sessionToken({ cookie, teamId });
  return bearer(accessToken);
}

const INVITE = `mutation ($teamId: ID!, $input: InviteToTeamInput!) {
  inviteToTeam(teamId: $teamId, input: $input) { token inviteUrl invite { id status role email username expiresAt mailState } } }`;
const ACCEPT =
  'mutation ($input: InviteAnswerInput!) { acceptInvite(input: $input) { member { userId role } } }';
const DECLINE =
  'mutation ($input: InviteAnswerInput!) { declineInvite(input: $input) { invite { status } } }';
const SET_ROLE =
  'mutation ($teamId: ID!, $userId: ID!, $role: TeamRole!) { setTeamMemberRole(teamId: $teamId, userId: $userId, role: $role) { role } }';
const REMOVE = 'mutation ($teamId: ID!, $userId: ID!) { removeTeamMember(teamId: $teamId, userId: $userId) }';

async function createTeam(ownerToken: string, name = 'lab'): Promise<string> {
  const data = await ok<{ createTeam: { id: string } }>(
    'mutation ($input: CreateTeamInput!) { createTeam(input: $input) { id } }',
    { input: { name } },
    ownerToken,
  );
  return data.createTeam.id;
}

/** Invites `who` with `role` (as `by`) and accepts as them. */
async function join(teamId: string, by: string, who: { username: string; token: string }, role: Role) {
  const { inviteToTeam } = await ok<{ inviteToTeam: { token: string } }>(
    INVITE,
    { teamId, input: { username: who.username, role: role.toUpperCase() } },
    by,
  );
  await ok(ACCEPT, { input: { token: inviteToTeam.token } }, who.token);
}

async function auditOf(teamId: string): Promise<AuditRecord[]> {
  return t.runtime.orm.em.fork().find(AuditRecord, { teamId }, { orderBy: { createdAt: 'asc' } });
}

describe('the role matrix', () => {
  let teamId: string;
  let owner: Awaited<ReturnType<typeof person>>;
  const session: Record<Role, string> = {} as Record<Role, string>;
  const people: Record<Role, Awaited<ReturnType<typeof person>>> = {} as never;
  let outsider: string;
  let doneJob: string;
  let model: string;

  beforeAll(async () => {
    owner = await person('owner');
    people.owner = owner;
    teamId = await createTeam(owner.token);
    for (const role of ['viewer', 'member', 'admin'] as Role[]) {
      people[role] = await person(role);
      await join(teamId, owner.token, people[role], role);
    }
    for (const role of ROLES) session[role] = await sessionFor(people[role].sub, teamId);
    outsider = (await person('outsider')).token;
    model = await programModel(t, session.owner, 'argv');
    doneJob = (await deploy(t, session.owner, model, {})).jobId;
    await waitForJob(t, session.owner, doneJob);
  });

  const newModel = () => programModel(t, session.owner, 'argv');
  const newMedia = async () => (await uploadFile(t, session.owner, pngBytes())).body.media.id;
  const newSpare = async () => {
    const spare = await person('spare');
    await join(teamId, owner.token, spare, 'member');
    return userId(spare.sub);
  };

  /** Each action: the least role it needs, and how to run it (fixtures made by an owner first). */
  const actions: {
    name: string;
    least: Role;
    run: (auth: string) => Promise<string | null>;
    team?: boolean;
  }[] = [
    {
      name: 'read the team',
      least: 'viewer',
      team: true,
      run: (a) => gqlCode('query ($id: ID!) { team(id: $id) { id role memberCount } }', { id: teamId }, a),
    },
    {
      name: 'list members',
      least: 'viewer',
      team: true,
      run: (a) =>
        gqlCode(
          'query ($id: ID!) { team(id: $id) { members { nodes { userId role } } } }',
          { id: teamId },
          a,
        ),
    },
    {
      name: "read the team's media, jobs, deployments, models",
      least: 'viewer',
      run: (a) =>
        gqlCode(
          '{ media { nodes { id } } jobs { nodes { id } } deployments { nodes { id } } models(filter: { mine: true }) { nodes { id } } }',
          {},
          a,
        ),
    },
    {
      name: 'read a job',
      least: 'viewer',
      run: (a) => gqlCode('query ($id: ID!) { job(id: $id) { id } }', { id: doneJob }, a),
    },
    {
      name: 'upload media',
      least: 'member',
      run: async (a) => statusCode((await uploadFile(t, a, pngBytes())).status),
    },
    {
      name: 'tag media',
      least: 'member',
      run: async (a) =>
        gqlCode(
          'mutation ($id: ID!) { updateMediaTags(id: $id, tags: ["x"]) { id } }',
          { id: await newMedia() },
          a,
        ),
    },
    {
      name: 'delete media',
      least: 'member',
      run: async (a) => gqlCode('mutation ($id: ID!) { deleteMedia(id: $id) }', { id: await newMedia() }, a),
    },
    {
      name: 'create a deployment',
      least: 'member',
      run: (a) =>
        gqlCode(
          'mutation ($input: CreateDeploymentInput!) { createDeployment(input: $input) { id } }',
          { input: { name: 'd', modelId: model, args: {} } },
          a,
        ),
    },
    {
      name: 'cancel a job',
      least: 'member',
      run: (a) => gqlCode('mutation ($id: ID!) { cancelJob(id: $id) { id } }', { id: doneJob }, a),
    },
    {
      name: 'retry a job',
      least: 'member',
      run: (a) => gqlCode('mutation ($id: ID!) { retryJob(id: $id) { id } }', { id: doneJob }, a),
    },
    {
      name: 'create a model',
      least: 'member',
      run: (a) =>
        gqlCode(
          'mutation ($input: CreateModelInput!) { createModel(input: $input) { id } }',
          { input: { name: 'm', container: 'local', command: 'echo {args}', args: [] } },
          a,
        ),
    },
    {
      name: 'update a team model',
      least: 'admin',
      run: async (a) =>
        gqlCode(
          'mutation ($id: ID!) { updateModel(id: $id, input: { description: "new" }) { id } }',
          { id: await newModel() },
          a,
        ),
    },
    {
      name: 'delete a team model',
      least: 'admin',
      run: async (a) => gqlCode('mutation ($id: ID!) { deleteModel(id: $id) }', { id: await newModel() }, a),
    },
    {
      name: 'create a team API key',
      least: 'admin',
      team: true,
      run: (a) =>
        gqlCode(
          'mutation ($teamId: ID!) { createApiKey(input: { name: "k", teamId: $teamId, role: "viewer" }) { value } }',
          { teamId },
          a,
        ),
    },
    {
      name: 'list team API keys',
      least: 'admin',
      team: true,
      run: (a) =>
        gqlCode('query ($teamId: ID!) { apiKeys(teamId: $teamId) { nodes { id } } }', { teamId }, a),
    },
    {
      name: 'revoke a team API key',
      least: 'admin',
      team: true,
      run: async (a) => {
        const { createApiKey } = await ok<{ createApiKey: { apiKey: { id: string } } }>(
          'mutation ($teamId: ID!) { createApiKey(input: { name: "k", teamId: $teamId }) { apiKey { id } } }',
          { teamId },
          session.owner,
        );
        return gqlCode(
          'mutation ($id: ID!) { revokeApiKey(id: $id) { id } }',
          { id: createApiKey.apiKey.id },
          a,
        );
      },
    },
    {
      name: 'read the webhook secret',
      least: 'admin',
      run: (a) => gqlCode('{ webhookSecret { __typename } }', {}, a),
    },
    {
      name: 'rotate the webhook secret',
      least: 'admin',
      run: (a) => gqlCode('mutation { rotateWebhookSecret { __typename } }', {}, a),
    },
    {
      name: 'invite',
      least: 'admin',
      team: true,
      run: (a) => gqlCode(INVITE, { teamId, input: { username: `nobody-${++seq}`, role: 'MEMBER' } }, a),
    },
    {
      name: 'list invitations',
      least: 'admin',
      team: true,
      run: (a) =>
        gqlCode('query ($id: ID!) { team(id: $id) { invites { nodes { id } } } }', { id: teamId }, a),
    },
    {
      name: 'revoke an invitation',
      least: 'admin',
      team: true,
      run: async (a) => {
        const { inviteToTeam } = await ok<{ inviteToTeam: { invite: { id: string } } }>(
          INVITE,
          { teamId, input: { username: `nobody-${++seq}` } },
          owner.token,
        );
        return gqlCode(
          'mutation ($teamId: ID!, $id: ID!) { revokeInvite(teamId: $teamId, inviteId: $id) { id } }',
          { teamId, id: inviteToTeam.invite.id },
          a,
        );
      },
    },
    {
      name: "change a non-owner's role",
      least: 'admin',
      team: true,
      run: async (a) => gqlCode(SET_ROLE, { teamId, userId: await newSpare(), role: 'VIEWER' }, a),
    },
    {
      name: 'remove a non-owner',
      least: 'admin',
      team: true,
      run: async (a) => gqlCode(REMOVE, { teamId, userId: await newSpare() }, a),
    },
    {
      name: 'read the audit log',
      least: 'admin',
      team: true,
      run: (a) =>
        gqlCode('query ($id: ID!) { team(id: $id) { auditLog { nodes { action } } } }', { id: teamId }, a),
    },
    {
      name: 'make an owner',
      least: 'owner',
      team: true,
      run: async (a) => gqlCode(SET_ROLE, { teamId, userId: await newSpare(), role: 'OWNER' }, a),
    },
    {
      name: 'remove an owner',
      least: 'owner',
      team: true,
      run: async (a) => {
        const spare = await newSpare();
        await ok(SET_ROLE, { teamId, userId: spare, role: 'OWNER' }, owner.token);
        return gqlCode(REMOVE, { teamId, userId: spare }, a);
      },
    },
    {
      name: 'invite an owner',
      least: 'owner',
      team: true,
      run: (a) => gqlCode(INVITE, { teamId, input: { username: `nobody-${++seq}`, role: 'OWNER' } }, a),
    },
    // The team still owns things: an owner passes the role check and meets the 409 that names them.
    {
      name: 'delete the team',
      least: 'owner',
      team: true,
      run: async (a) => {
        const res = await t.gql('mutation ($id: ID!) { deleteTeam(teamId: $id) }', { id: teamId }, a);
        const code = codeOf(res);
        if (code === 'CONFLICT') expect(res.body.errors[0].message).toMatch(/media.*models/);
        return code === 'CONFLICT' ? null : code;
      },
    },
  ];

  async function gqlCode(query: string, variables: Record<string, unknown>, auth: string) {
    return codeOf(await t.gql(query, variables, auth));
  }
  const statusCode = (status: number) =>
    status < 300 ? null : status === 403 ? 'FORBIDDEN' : status === 404 ? 'NOT_FOUND' : String(status);

  const cells = actions.flatMap((a) => ROLES.map((role) => [a.name, role, a] as const));
  it.each(cells)('%s as a team %s', async (_name, role, action) => {
    const allowed = ROLES.indexOf(role) >= ROLES.indexOf(action.least);
    await expect(action.run(session[role])).resolves.toBe(allowed ? null : 'FORBIDDEN');
  });

  const teamActions = actions.filter((a) => a.team);
  it.each(teamActions.map((a) => [a.name, a] as const))(
    '%s: a non-member gets 404',
    async (_name, action) => {
      await expect(action.run(outsider)).resolves.toBe('NOT_FOUND');
    },
  );

  it("a non-member reaches none of the team's resources (404)", async () => {
    const media = await newMedia();
    for (const [query, id] of [
      ['mutation ($id: ID!) { deleteMedia(id: $id) }', media],
      ['mutation ($id: ID!) { cancelJob(id: $id) { id } }', doneJob],
      ['mutation ($id: ID!) { retryJob(id: $id) { id } }', doneJob],
      ['query ($id: ID!) { job(id: $id) { id } }', doneJob],
      // (Models are a public catalogue: another owner's model is seen, and changing it is 403.)
    ])
      await expect(gqlCode(query, { id }, outsider)).resolves.toBe('NOT_FOUND');
  });

  it('a user token acts as the user, not for the team, even for a member', async () => {
    const res = await ok<{ media: { nodes: { id: string }[] } }>(
      '{ media { nodes { id } } }',
      {},
      owner.token,
    );
    expect(res.media.nodes).toEqual([]);
  });

  it('REST answers 403 FORBIDDEN with the error shape', async () => {
    const res = await t
      .http()
      .post('/api/v1/models')
      .set('authorization', session.viewer)
      .send({ name: 'x', container: 'local', command: 'echo {args}', args: {} });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: { code: 'FORBIDDEN', message: expect.any(String) } });
  });
});

describe('team API keys carry a role', () => {
  it('a viewer key reads, a member key writes, neither manages; a key outlives its creator', async () => {
    const owner = await person('kowner');
    const admin = await person('kadmin');
    const teamId = await createTeam(owner.token);
    await join(teamId, owner.token, admin, 'admin');
    const make = async (role?: string) => {
      const res = await t
        .http()
        .post('/api/v1/tokens')
        .set('authorization', admin.token)
        .send({ name: 'k', team_id: teamId, role });
      expect(res.status).toBe(201);
      return res.body.token as string;
    };
    const viewerKey = await make('viewer');
    const memberKey = await make();
    expect(
      (
        await t
          .http()
          .post('/api/v1/tokens')
          .set('authorization', admin.token)
          .send({ name: 'k', team_id: teamId, role: 'admin' })
      ).status,
    ).toBe(400);
    const createModel = (key: string) =>
      t
        .http()
        .post('/api/v1/models')
        .set('x-service-key', key)
        .send({ name: 'm', container: 'local', command: 'echo {args}', args: {} });
    expect((await createModel(viewerKey)).status).toBe(403);
    expect((await createModel(memberKey)).status).toBe(201);
    expect((await t.http().get('/api/v1/media').set('x-service-key', viewerKey)).status).toBe(200);
    const byKey = await t
      .http()
      .post('/api/v1/tokens')
      .set('x-service-key', memberKey)
      .send({ name: 'k', team_id: teamId });
    expect(byKey.status).toBe(403);
    const listed = await ok<{
      apiKeys: { nodes: { role: string; createdById: string; createdByUsername: string }[] };
    }>(
      'query ($teamId: ID!) { apiKeys(teamId: $teamId) { nodes { role createdById createdByUsername } } }',
      { teamId },
      owner.token,
    );
    expect(listed.apiKeys.nodes.map((k) => k.role).sort()).toEqual(['member', 'viewer']);
    expect(listed.apiKeys.nodes[0]).toMatchObject({
      createdById: await userId(admin.sub),
      createdByUsername: admin.username,
    });
    await ok('mutation ($teamId: ID!) { leaveTeam(teamId: $teamId) }', { teamId }, admin.token);
    expect((await createModel(memberKey)).status).toBe(201);
  });
});

describe('members', () => {
  it('shows the team with the caller role and member count, and the members', async () => {
    const owner = await person('mowner');
    const other = await person('mother');
    const teamId = await createTeam(owner.token, 'shown');
    await join(teamId, owner.token, other, 'viewer');
    const res = await t.http().get(`/api/v1/teams/${teamId}`).set('authorization', other.token);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: teamId, name: 'shown', role: 'viewer', member_count: 2 });
    const members = await t.http().get(`/api/v1/teams/${teamId}/members`).set('authorization', other.token);
    expect(members.status).toBe(200);
    expect(members.body).toEqual(
      expect.arrayContaining([
        {
          user_id: await userId(owner.sub),
          username: owner.username,
          email: owner.email,
          name: null,
          role: 'owner',
          joined_at: expect.any(String),
        },
        expect.objectContaining({ username: other.username, role: 'viewer' }),
      ]),
    );
    const put = await t
      .http()
      .put(`/api/v1/teams/${teamId}/members/${await userId(other.sub)}`)
      .set('authorization', owner.token)
      .send({ role: 'admin' });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ username: other.username, role: 'admin' });
  });

  it('a team keeps at least one owner (409)', async () => {
    const owner = await person('lone');
    const teamId = await createTeam(owner.token);
    const me = await userId(owner.sub);
    expect(codeOf(await t.gql(SET_ROLE, { teamId, userId: me, role: 'ADMIN' }, owner.token))).toBe(
      'CONFLICT',
    );
    const leave = await t
      .http()
      .delete(`/api/v1/teams/${teamId}/members/${me}`)
      .set('authorization', owner.token);
    expect(leave.status).toBe(409);
    expect(leave.body.error.code).toBe('CONFLICT');
    const second = await person('second');
    await join(teamId, owner.token, second, 'owner');
    expect(
      (await t.http().delete(`/api/v1/teams/${teamId}/members/${me}`).set('authorization', owner.token))
        .status,
    ).toBe(204);
  });

  it('deletes a team only when it owns nothing live, naming what it owns', async () => {
    const owner = await person('downer');
    const teamId = await createTeam(owner.token);
    const s = await sessionFor(owner.sub, teamId);
    const m = await programModel(t, s, 'argv');
    const refused = await t.http().delete(`/api/v1/teams/${teamId}`).set('authorization', owner.token);
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toMatch(/1 models/);
    await ok('mutation ($id: ID!) { deleteModel(id: $id) }', { id: m }, s);
    expect((await t.http().delete(`/api/v1/teams/${teamId}`).set('authorization', owner.token)).status).toBe(
      204,
    );
    expect((await t.http().get(`/api/v1/teams/${teamId}`).set('authorization', owner.token)).status).toBe(
      404,
    );
    // Its records stay (until AUDIT_RETENTION_DAYS), the deletion the last of them.
    expect((await auditOf(teamId)).map((r) => r.action).slice(-2)).toEqual(['model.deleted', 'team.deleted']);
  });

  it("removal ends the member's team sessions and subscriptions at once", async () => {
    const owner = await person('rowner');
    const gone = await person('gone');
    const teamId = await createTeam(owner.token);
    await join(teamId, owner.token, gone, 'member');
    const s = await sessionFor(gone.sub, teamId);
    expect((await t.http().get('/api/v1/media').set('authorization', s)).status).toBe(200);
    let onClose!: (code: number) => void;
    const closed = new Promise<number>((r) => (onClose = r));
    const client = createClient({
      url: `ws://127.0.0.1:${t.port}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: s },
      retryAttempts: 0,
      lazy: false,
      // The close is expected: the test waits for its code.
      onNonLazyError: () => undefined,
      on: { closed: (e) => onClose((e as { code: number }).code) },
    });
    try {
      const seen = await new Promise((resolve, reject) => {
        let v: unknown;
        client.subscribe(
          { query: '{ me { teamId teamRole } }' },
          { next: (x) => (v = x), error: reject, complete: () => resolve(v) },
        );
      });
      expect(seen).toEqual({ data: { me: { teamId, teamRole: 'member' } } });
      const removed = await t
        .http()
        .delete(`/api/v1/teams/${teamId}/members/${await userId(gone.sub)}`)
        .set('authorization', owner.token);
      expect(removed.status).toBe(204);
      expect((await t.http().get('/api/v1/media').set('authorization', s)).status).toBe(401);
      await expect(closed).resolves.toBe(4403);
    } finally {
      await client.dispose();
    }
  });
});

describe('invitations', () => {
  let owner: Awaited<ReturnType<typeof person>>;
  let teamId: string;
  beforeAll(async () => {
    owner = await person('iowner');
    teamId = await createTeam(owner.token, 'inviting');
  });
  const invite = async (input: Record<string, unknown>) =>
    (
      await ok<{ inviteToTeam: { token: string; inviteUrl: string; invite: { id: string } } }>(
        INVITE,
        { teamId, input },
        owner.token,
      )
    ).inviteToTeam;

  it('REST: invite by email, list it (without the token), accept as the verified addressee', async () => {
    const guest = await person('guest');
    const res = await t
      .http()
      .post(`/api/v1/teams/${teamId}/invites`)
      .set('authorization', owner.token)
      .send({ email: guest.email, role: 'viewer' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      email: guest.email,
      role: 'viewer',
      status: 'pending',
      expires_at: expect.any(String),
      invite_url: `${t.config.publicUrl}/invites/accept?token=${res.body.token}`,
      token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      mail_state: 'none',
    });
    expect(new Date(res.body.expires_at).getTime() - Date.now()).toBeGreaterThan(167 * 3600_000);
    const listed = await t.http().get(`/api/v1/teams/${teamId}/invites`).set('authorization', owner.token);
    expect(listed.body.find((i: { id: string }) => i.id === res.body.id)).not.toHaveProperty('token');
    const mine = await t.http().get('/api/v1/invites').set('authorization', guest.token);
    expect(mine.body.map((i: { id: string }) => i.id)).toEqual([res.body.id]);
    const stored = await t.runtime.orm.em.fork().findOneOrFail(TeamInvite, { id: res.body.id });
    expect(stored.tokenHash).not.toContain(res.body.token);
    const accepted = await t
      .http()
      .post('/api/v1/invites/accept')
      .set('authorization', guest.token)
      .send({ invite_id: res.body.id });
    expect(accepted.status).toBe(200);
    const team = await t.http().get(`/api/v1/teams/${teamId}`).set('authorization', guest.token);
    expect(team.body.role).toBe('viewer');
  });

  it('refuses the wrong person (403) and the invitation stays usable', async () => {
    const meant = await person('meant');
    const other = await person('other');
    const { token } = await invite({ username: meant.username });
    expect(codeOf(await t.gql(ACCEPT, { input: { token } }, other.token))).toBe('FORBIDDEN');
    // An unverified email does not match either.
    const unverified = bearer(
      await t.tokenFor(`unv-${++seq}`, {
        preferred_username: `unv-${seq}`,
        email: 'u@x.test',
        email_verified: false,
      }),
    );
    const byEmail = await invite({ email: 'u@x.test' });
    expect(codeOf(await t.gql(ACCEPT, { input: { token: byEmail.token } }, unverified))).toBe('FORBIDDEN');
    await ok(ACCEPT, { input: { token } }, meant.token);
  });

  it('a used, revoked, declined or expired invitation is 404; inviting a member is 409', async () => {
    const a = await person('used');
    const { token } = await invite({ username: a.username });
    await ok(ACCEPT, { input: { token } }, a.token);
    expect(codeOf(await t.gql(ACCEPT, { input: { token } }, a.token))).toBe('NOT_FOUND');
    expect(codeOf(await t.gql(INVITE, { teamId, input: { username: a.username } }, owner.token))).toBe(
      'CONFLICT',
    );
    expect(codeOf(await t.gql(INVITE, { teamId, input: { email: a.email } }, owner.token))).toBe('CONFLICT');

    const b = await person('revoked');
    const revoked = await invite({ username: b.username });
    const del = await t
      .http()
      .delete(`/api/v1/teams/${teamId}/invites/${revoked.invite.id}`)
      .set('authorization', owner.token);
    expect(del.status).toBe(204);
    expect(codeOf(await t.gql(ACCEPT, { input: { token: revoked.token } }, b.token))).toBe('NOT_FOUND');

    const declined = await invite({ username: b.username });
    await ok(DECLINE, { input: { token: declined.token } }, b.token);
    expect(codeOf(await t.gql(ACCEPT, { input: { token: declined.token } }, b.token))).toBe('NOT_FOUND');

    const expired = await invite({ username: b.username });
    await t.runtime.orm.em
      .fork()
      .nativeUpdate(TeamInvite, { id: expired.invite.id }, { expiresAt: new Date(Date.now() - 1000) });
    expect(codeOf(await t.gql(ACCEPT, { input: { token: expired.token } }, b.token))).toBe('NOT_FOUND');
    expect(codeOf(await t.gql(ACCEPT, { input: { token: 'nonsense' } }, b.token))).toBe('NOT_FOUND');
  });

  it('bad input is VALIDATION_FAILED and writes nothing', async () => {
    const before = (await auditOf(teamId)).length;
    for (const input of [
      {},
      { email: 'a@x.test', username: 'a' },
      { email: 'not-an-address' },
      { username: 'x', role: 'boss' },
    ]) {
      const res = await t
        .http()
        .post(`/api/v1/teams/${teamId}/invites`)
        .set('authorization', owner.token)
        .send(input);
      expect(res.status).toBe(400);
    }
    expect((await auditOf(teamId)).length).toBe(before);
  });
});

describe('the audit log', () => {
  it('each change leaves exactly one record, in its transaction; a refused change leaves none', async () => {
    const owner = await person('aowner');
    const member = await person('amember');
    const teamId = await createTeam(owner.token);
    const s = await sessionFor(owner.sub, teamId);
    await join(teamId, owner.token, member, 'member');
    const memberId = await userId(member.sub);
    await ok(SET_ROLE, { teamId, userId: memberId, role: 'VIEWER' }, owner.token);
    const declined = await person('adecline');
    const d = (
      await ok<{ inviteToTeam: { token: string; invite: { id: string } } }>(
        INVITE,
        { teamId, input: { username: declined.username } },
        owner.token,
      )
    ).inviteToTeam;
    await ok(DECLINE, { input: { token: d.token } }, declined.token);
    const r = (
      await ok<{ inviteToTeam: { invite: { id: string } } }>(
        INVITE,
        { teamId, input: { username: 'x-nobody' } },
        owner.token,
      )
    ).inviteToTeam;
    await ok(
      'mutation ($teamId: ID!, $id: ID!) { revokeInvite(teamId: $teamId, inviteId: $id) { id } }',
      { teamId, id: r.invite.id },
      owner.token,
    );
    const key = (
      await ok<{ createApiKey: { apiKey: { id: string } } }>(
        'mutation ($teamId: ID!) { createApiKey(input: { name: "k", teamId: $teamId }) { apiKey { id } } }',
        { teamId },
        s,
      )
    ).createApiKey;
    await ok('mutation ($id: ID!) { revokeApiKey(id: $id) { id } }', { id: key.apiKey.id }, s);
    const m = await programModel(t, s, 'argv');
    await ok(
      'mutation ($id: ID!) { updateModel(id: $id, input: { description: "d" }) { id } }',
      { id: m },
      s,
    );
    const job = (await deploy(t, s, m, {})).jobId;
    await waitForJob(t, s, job);
    await ok('mutation ($id: ID!) { retryJob(id: $id) { id } }', { id: job }, s);
    const running = await programModel(t, s, 'idle');
    const idle = (await deploy(t, s, running, {})).jobId;
    await ok('mutation ($id: ID!) { cancelJob(id: $id) { id } }', { id: idle }, s);
    const media = (await uploadFile(t, s, pngBytes())).body.media.id;
    await ok('mutation ($id: ID!) { deleteMedia(id: $id) }', { id: media }, s);
    await ok('mutation { rotateWebhookSecret { __typename } }', {}, s);
    await ok('mutation ($id: ID!) { deleteModel(id: $id) }', { id: running }, s);
    await ok(REMOVE, { teamId, userId: memberId }, owner.token);
    const leaver = await person('aleaver');
    await join(teamId, owner.token, leaver, 'viewer');
    await ok('mutation ($teamId: ID!) { leaveTeam(teamId: $teamId) }', { teamId }, leaver.token);

    // Refused changes write nothing.
    const count = (await auditOf(teamId)).length;
    expect(
      codeOf(await t.gql(SET_ROLE, { teamId, userId: await userId(owner.sub), role: 'ADMIN' }, owner.token)),
    ).toBe('CONFLICT');
    expect(codeOf(await t.gql(INVITE, { teamId, input: { username: owner.username } }, owner.token))).toBe(
      'CONFLICT',
    );
    expect((await auditOf(teamId)).length).toBe(count);

    const actions = (await auditOf(teamId)).map((a) => a.action);
    expect(actions).toEqual([
      'team.created',
      'member.invited',
      'invite.accepted',
      'member.role_changed',
      'member.invited',
      'invite.declined',
      'member.invited',
      'invite.revoked',
      'api_key.created',
      'api_key.revoked',
      'model.created',
      'model.updated',
      'deployment.created',
      'job.retried',
      'model.created',
      'deployment.created',
      'job.canceled',
      'media.deleted',
      'webhook_secret.rotated',
      'model.deleted',
      'member.removed',
      'member.invited',
      'invite.accepted',
      'member.left',
    ]);
    const records = await auditOf(teamId);
    const changed = records.find((a) => a.action === 'member.role_changed')!;
    expect(changed).toMatchObject({
      actorUserId: await userId(owner.sub),
      actorVia: 'user_token',
      targetType: 'user',
      targetId: memberId,
      details: { old_role: 'member', new_role: 'viewer' },
      clientAddress: expect.any(String),
      requestId: expect.any(String),
    });
    expect(records.find((a) => a.action === 'api_key.created')).toMatchObject({ actorVia: 'session' });

    // Admins read it, newest first, filtered by action and by actor.
    const res = await t
      .http()
      .get(`/api/v1/teams/${teamId}/audit`)
      .query({ action: 'member.invited', limit: 2 })
      .set('authorization', owner.token);
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(2);
    expect(res.body[0]).toMatchObject({
      action: 'member.invited',
      actor: { user_id: await userId(owner.sub), via: 'user_token', api_key_id: null },
    });
    expect(res.headers.link).toMatch(/rel="next"/);
    const byActor = await t
      .http()
      .get(`/api/v1/teams/${teamId}/audit`)
      .query({ actor: await userId(declined.sub) })
      .set('authorization', owner.token);
    expect(byActor.body.map((a: { action: string }) => a.action)).toEqual(['invite.declined']);
  });

  it('is kept AUDIT_RETENTION_DAYS', async () => {
    const em = t.runtime.orm.em.fork();
    const old = em.create(AuditRecord, {
      teamId: '00000000-0000-4000-8000-000000000000',
      actorVia: 'session',
      action: 'x',
      targetType: 'team',
      createdAt: new Date(Date.now() - 366 * 86_400_000),
    });
    await em.flush();
    expect(await t.runtime.services.audit.sweep()).toBeGreaterThanOrEqual(1);
    expect(await t.runtime.orm.em.fork().findOne(AuditRecord, { id: old.id })).toBeNull();
  });
});

describe('the audit record is written with its change, or neither is', () => {
  /** Makes PostgreSQL refuse records of `action`, runs `fn`, and lifts the refusal. */
  async function refusing(action: string, fn: () => Promise<void>) {
    const conn = t.runtime.orm.em.getConnection();
    await conn.execute(
      `alter table team_audit add constraint refuse_for_test check (action <> '${action}') not valid`,
    );
    try {
      await fn();
    } finally {
      await conn.execute('alter table team_audit drop constraint refuse_for_test');
    }
  }

  it('a role change, a deployment and a cancellation do not happen when their record cannot be written', async () => {
    const owner = await person('atomic');
    const other = await person('atomic2');
    const teamId = await createTeam(owner.token);
    await join(teamId, owner.token, other, 'member');
    const s = await sessionFor(owner.sub, teamId);
    const otherId = await userId(other.sub);
    await refusing('member.role_changed', async () => {
      expect(codeOf(await t.gql(SET_ROLE, { teamId, userId: otherId, role: 'ADMIN' }, owner.token))).toBe(
        'INTERNAL',
      );
    });
    const members = await ok<{ team: { members: { nodes: { userId: string; role: string }[] } } }>(
      'query ($id: ID!) { team(id: $id) { members { nodes { userId role } } } }',
      { id: teamId },
      owner.token,
    );
    expect(members.team.members.nodes.find((m) => m.userId === otherId)!.role).toBe('MEMBER');

    const model = await programModel(t, s, 'idle');
    await refusing('deployment.created', async () => {
      const res = await t.gql(
        'mutation ($input: CreateDeploymentInput!) { createDeployment(input: $input) { id } }',
        { input: { name: 'd', modelId: model, args: {} } },
        s,
      );
      expect(codeOf(res)).toBe('INTERNAL');
    });
    expect(
      (await ok<{ deployments: { nodes: unknown[] } }>('{ deployments { nodes { id } } }', {}, s)).deployments
        .nodes,
    ).toEqual([]);

    const job = (await deploy(t, s, model, {})).jobId;
    await refusing('job.canceled', async () => {
      expect(codeOf(await t.gql('mutation ($id: ID!) { cancelJob(id: $id) { id } }', { id: job }, s))).toBe(
        'INTERNAL',
      );
    });
    const status = (
      await ok<{ job: { status: string } }>('query ($id: ID!) { job(id: $id) { status } }', { id: job }, s)
    ).job.status;
    expect(status).not.toBe('CANCELED');
    await ok('mutation ($id: ID!) { cancelJob(id: $id) { id } }', { id: job }, s);
    expect((await auditOf(teamId)).filter((a) => a.action === 'job.canceled')).toHaveLength(1);
  });
});

describe('invitation mail over SMTP', () => {
  it('mails the link; a failing server never fails the invitation, and the mail is retried', async () => {
    const received: { to: string; text: string }[] = [];
    let refuse = 1;
    const smtp = new SMTPServer({
      disabledCommands: ['STARTTLS', 'AUTH'],
      onRcptTo(_address, _session, cb) {
        if (refuse > 0) {
          refuse--;
          return cb(Object.assign(new Error('mailbox busy, try later'), { responseCode: 451 }));
        }
        cb();
      },
      onData(stream, session, cb) {
        let text = '';
        stream.on('data', (c: Buffer) => (text += c.toString()));
        stream.on('end', () => {
          received.push({ to: session.envelope.rcptTo[0].address, text });
          cb();
        });
      },
    });
    await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', r));
    const port = (smtp.server.address() as AddressInfo).port;
    const app = await startTestApp(
      { SMTP_URL: `smtp://127.0.0.1:${port}`, MAIL_FROM: 'team@media.test' },
      { issuer: t.issuer },
    );
    try {
      const ownerToken = bearer(
        await app.tokenFor('mailowner', { preferred_username: 'mailowner', name: 'Mail Owner' }),
      );
      const created = await app.gql(
        'mutation { createTeam(input: { name: "mailers" }) { id } }',
        {},
        ownerToken,
      );
      const teamId = created.body.data.createTeam.id;
      const res = await app
        .http()
        .post(`/api/v1/teams/${teamId}/invites`)
        .set('authorization', ownerToken)
        .send({ email: 'Invitee@X.test', role: 'member' });
      expect(res.status).toBe(201);
      expect(res.body.mail_state).toBe('pending');
      const state = async () =>
        (await app.runtime.orm.em.fork().findOneOrFail(TeamInvite, { id: res.body.id })).mailState;
      expect(await until(state, (v) => v === 'failed')).toBe('failed');
      const listed = await app.http().get(`/api/v1/teams/${teamId}/invites`).set('authorization', ownerToken);
      expect(listed.body[0]).toMatchObject({
        mail_state: 'failed',
        mail_error: expect.stringMatching(/busy/),
      });
      expect(await until(state, (v) => v === 'sent', 30_000)).toBe('sent');
      expect(received).toHaveLength(1);
      expect(received[0].to).toBe('invitee@x.test');
      const body = received[0].text.replace(/=\r?\n/g, '').replace(/=3D/g, '=');
      expect(body).toContain(res.body.invite_url);
      expect(body).toMatch(/From: team@media.test/);
      expect(body).toMatch(/Mail Owner invites you to mailers/);
    } finally {
      await app.close();
      await new Promise<void>((r) => smtp.close(() => r()));
    }
  });
});

describe('tenancy of the new ids', () => {
  it("another team's team, members, invitations and audit records answer 404, even to another team's owner", async () => {
    const a = await person('tena');
    const b = await person('tenb');
    const aMember = await person('tenam');
    const teamA = await createTeam(a.token);
    const teamB = await createTeam(b.token);
    await join(teamA, a.token, aMember, 'member');
    const invA = (
      await ok<{ inviteToTeam: { token: string; invite: { id: string } } }>(
        INVITE,
        { teamId: teamA, input: { username: 'someone-else' } },
        a.token,
      )
    ).inviteToTeam;
    const aMemberId = await userId(aMember.sub);
    const http = t.http();
    const paths: [string, string, Record<string, unknown>?][] = [
      ['get', `/api/v1/teams/${teamA}`],
      ['get', `/api/v1/teams/${teamA}/members`],
      ['get', `/api/v1/teams/${teamA}/invites`],
      ['get', `/api/v1/teams/${teamA}/audit`],
      ['put', `/api/v1/teams/${teamA}/members/${aMemberId}`, { role: 'viewer' }],
      ['delete', `/api/v1/teams/${teamA}/members/${aMemberId}`],
      ['delete', `/api/v1/teams/${teamA}/invites/${invA.invite.id}`],
      ['delete', `/api/v1/teams/${teamA}`],
      ['post', `/api/v1/teams/${teamA}/invites`, { username: 'x' }],
      // Team A's ids under team B's path: B's owner reaches only B's rows.
      ['put', `/api/v1/teams/${teamB}/members/${aMemberId}`, { role: 'viewer' }],
      ['delete', `/api/v1/teams/${teamB}/members/${aMemberId}`],
      ['delete', `/api/v1/teams/${teamB}/invites/${invA.invite.id}`],
      ['post', '/api/v1/invites/accept', { invite_id: invA.invite.id }],
      ['post', '/api/v1/invites/decline', { invite_id: invA.invite.id }],
    ];
    for (const [method, path, body] of paths) {
      const req = (http as unknown as Record<string, (p: string) => import('supertest').Test>)
        [method](path)
        .set('authorization', b.token);
      const res = await (body ? req.send(body) : req);
      expect([path, res.status, res.body.error?.code]).toEqual([path, 404, 'NOT_FOUND']);
    }
    const bKey = (
      await t.http().post('/api/v1/tokens').set('authorization', b.token).send({ name: 'k', team_id: teamB })
    ).body.token;
    expect((await t.http().get(`/api/v1/teams/${teamA}`).set('x-service-key', bKey)).status).toBe(404);
    const bSession = await sessionFor(b.sub, teamB);
    expect((await t.http().get(`/api/v1/teams/${teamA}/members`).set('authorization', bSession)).status).toBe(
      404,
    );
    // B's audit log has none of A's records, and A's audit log names none of B's.
    const bAudit = (await auditOf(teamB)).map((r) => r.targetId);
    expect(bAudit).not.toContain(invA.invite.id);
    expect((await auditOf(teamA)).every((r) => r.teamId === teamA)).toBe(true);
  });
});
