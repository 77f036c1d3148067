import { Client } from 'pg';
import { createLogger } from '../src/common/logger';
import { User } from '../src/users/user.entity';
import { startTestApp, type TestApp } from './helpers/app';

/**
 * Owners' secrets (issue 32): kept sealed, answered by name only, never logged. Their delivery to
 * jobs and the redaction of job output: test/secrets-jobs.test.ts and the cluster suites.
 */
let t: TestApp;
let alice: string;
let bob: string;
/** Alice acting for her team as its owner; a member key of the team. */
let team: string;
let member: string;
let aliceId: string;
let teamId: string;
const logged: string[] = [];

const VALUE = 'hf_Zq8v-THE-SECRET-VALUE-3kT9';

beforeAll(async () => {
  const log = createLogger('debug', {
    apiKeyHeader: 'x-service-key',
    destination: { write: (line: string) => logged.push(line) },
  });
  t = await startTestApp({}, { log });
  alice = `Bearer ${await t.tokenFor('secrets-alice')}`;
  bob = `Bearer ${await t.tokenFor('secrets-bob')}`;
  const created = await t
    .http()
    .post('/api/v1/teams')
    .set('authorization', alice)
    .send({ name: 'Secret team' });
  teamId = created.body.id;
  const key = await t
    .http()
    .post('/api/v1/tokens')
    .set('authorization', alice)
    .send({ name: 'team', team_id: teamId, role: 'member' });
  member = `Bearer ${key.body.token}`;
  const user = await t.runtime.orm.em.fork().findOneOrFail(User, { subject: 'secrets-alice' });
  const cookie = await t.runtime.services.sessions.open(user, null);
  team = `Bearer ${(await t.runtime.services.login.sessionToken({ cookie, teamId })).accessToken}`;
  aliceId = (await t.gql('{ me { id } }', {}, alice)).body.data.me.id;
});
afterAll(() => t.close());

const setSecret = (auth: string, name: string, body: unknown) =>
  t
    .http()
    .put(`/api/v1/secrets/${name}`)
    .set('authorization', auth)
    .send(body as object);
const list = async (auth: string) => {
  const res = await t.http().get('/api/v1/secrets').set('authorization', auth);
  expect(res.status).toBe(200);
  return res.body as { name: string; created_at: string; updated_at: string }[];
};

async function sql<T>(query: string, params: unknown[] = []): Promise<T[]> {
  const pg = new Client({ connectionString: t.databaseUrl });
  await pg.connect();
  try {
    return (await pg.query(query, params)).rows;
  } finally {
    await pg.end();
  }
}

describe('secrets over REST', () => {
  it('keeps a value sealed, answers names and times only, and replaces it on a second PUT', async () => {
    const first = await setSecret(alice, 'HF_TOKEN', { value: VALUE });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      name: 'HF_TOKEN',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(await list(alice)).toEqual([first.body]);

    const second = await setSecret(alice, 'HF_TOKEN', { value: `${VALUE}-rotated` });
    expect(second.status).toBe(200);
    expect(second.body.created_at).toBe(first.body.created_at);
    expect(new Date(second.body.updated_at).getTime()).toBeGreaterThanOrEqual(
      new Date(first.body.updated_at).getTime(),
    );
    expect(await list(alice)).toEqual([second.body]);

    // In the database only sealed, bound to its owner and name.
    const rows = await sql<{ sealed_value: string }>(
      `select sealed_value from secrets where owner_type = 'user' and owner_id = $1`,
      [aliceId],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0].sealed_value).toMatch(/^v1\./);
    expect(rows[0].sealed_value).not.toContain(VALUE);
    // The job side opens it for Alice's jobs, and for nobody else's.
    const secrets = t.runtime.services.secrets;
    expect(await secrets.open({ type: 'user', id: aliceId }, ['HF_TOKEN'])).toEqual([
      { name: 'HF_TOKEN', value: `${VALUE}-rotated` },
    ]);
    expect(await secrets.open({ type: 'team', id: teamId }, ['HF_TOKEN'])).toEqual([]);
    expect(await secrets.missing({ type: 'user', id: aliceId }, ['HF_TOKEN', 'LICENCE'])).toEqual([
      'LICENCE',
    ]);
  });

  it("keeps each owner's secrets apart: a user's, another user's and a team's", async () => {
    await setSecret(alice, 'SHARED_NAME', { value: 'alice value' });
    expect((await setSecret(team, 'SHARED_NAME', { value: 'team value' })).status).toBe(200);
    expect((await list(team)).map((s) => s.name)).toEqual(['SHARED_NAME']);
    expect(await list(bob)).toEqual([]);
    // Bob cannot delete Alice's, and deleting the team's leaves Alice's.
    expect((await t.http().delete('/api/v1/secrets/SHARED_NAME').set('authorization', bob)).status).toBe(404);
    expect((await t.http().delete('/api/v1/secrets/SHARED_NAME').set('authorization', team)).status).toBe(
      204,
    );
    expect(await list(team)).toEqual([]);
    expect((await list(alice)).map((s) => s.name)).toContain('SHARED_NAME');
    const again = await t.http().delete('/api/v1/secrets/SHARED_NAME').set('authorization', team);
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('NOT_FOUND');
  });

  it('refuses names that are not usable variable names, and empty, oversized or non-text values, writing nothing', async () => {
    const before = await list(alice);
    const cases: [string, unknown, Record<string, string>][] = [
      ['1ABC', { value: 'x' }, { name: expect.stringMatching(/environment variable name/) }],
      ['PATH', { value: 'x' }, { name: 'PATH is set by the service for every job' }],
      ['KEY_FILE', { value: 'x' }, { name: expect.stringMatching(/_FILE/) }],
      ['OK_NAME', { value: '' }, { value: 'must not be empty' }],
      ['OK_NAME', { value: 'x'.repeat(64 * 1024 + 1) }, { value: 'must be at most 65536 bytes' }],
      // 2 bytes a character: within 64 Ki characters, over 64 KiB.
      ['OK_NAME', { value: 'é'.repeat(32 * 1024 + 1) }, { value: 'must be at most 65536 bytes' }],
      ['OK_NAME', { value: 'a\u0000b' }, { value: 'must not contain NUL characters' }],
      ['OK_NAME', { value: 12345 }, { value: 'is required, as a string' }],
      ['OK_NAME', {}, { value: 'is required, as a string' }],
    ];
    for (const [name, body, details] of cases) {
      const res = await setSecret(alice, name, body);
      expect([name, res.status, res.body.error]).toEqual([
        name,
        400,
        expect.objectContaining({ code: 'VALIDATION_FAILED', details }),
      ]);
      expect(JSON.stringify(res.body)).not.toContain('12345');
    }
    expect((await setSecret(alice, 'OK_NAME', { value: 'x'.repeat(64 * 1024) })).status).toBe(200);
    expect((await list(alice)).length).toBe(before.length + 1);
  });

  it('keeps at most 100 secrets per owner', async () => {
    for (let i = 0; i < 100; i++)
      expect((await setSecret(bob, `KEY_${i}`, { value: `v${i}` })).status).toBe(200);
    const over = await setSecret(bob, 'ONE_MORE', { value: 'v' });
    expect(over.status).toBe(409);
    expect(over.body.error.code).toBe('CONFLICT');
    // Replacing one that exists is still fine.
    expect((await setSecret(bob, 'KEY_0', { value: 'new' })).status).toBe(200);
    expect(await list(bob)).toHaveLength(100);
  });
});

describe("a team's secrets", () => {
  it('are read by its members, set and deleted by its admins and owners, each change in its audit log', async () => {
    expect((await setSecret(team, 'TEAM_TOKEN', { value: VALUE })).status).toBe(200);
    expect((await list(member)).map((s) => s.name)).toEqual(['TEAM_TOKEN']);
    for (const res of [
      await setSecret(member, 'TEAM_TOKEN', { value: 'overwritten' }),
      await t.http().delete('/api/v1/secrets/TEAM_TOKEN').set('authorization', member),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
    }
    expect(await t.runtime.services.secrets.open({ type: 'team', id: teamId }, ['TEAM_TOKEN'])).toEqual([
      { name: 'TEAM_TOKEN', value: VALUE },
    ]);
    expect((await t.http().delete('/api/v1/secrets/TEAM_TOKEN').set('authorization', team)).status).toBe(204);
    const audit = await sql<{ action: string; target_id: string; details: unknown }>(
      `select action, target_id, details from team_audit where team_id = $1 and target_type = 'secret' order by created_at`,
      [teamId],
    );
    expect(audit.filter((a) => a.target_id === 'TEAM_TOKEN')).toEqual([
      { action: 'secret.set', target_id: 'TEAM_TOKEN', details: {} },
      { action: 'secret.deleted', target_id: 'TEAM_TOKEN', details: {} },
    ]);
    expect(JSON.stringify(await sql('select * from team_audit'))).not.toContain(VALUE);
  });
});

describe('secrets over GraphQL', () => {
  it('sets, lists and deletes, with no way to select a value', async () => {
    const set = await t.gql(
      'mutation ($v: String!) { setSecret(name: "LICENCE_KEY", value: $v) { name createdAt updatedAt } }',
      { v: VALUE },
      team,
    );
    expect(set.body.data.setSecret).toMatchObject({ name: 'LICENCE_KEY' });
    const listed = await t.gql('{ secrets { name } }', {}, team);
    expect(listed.body.data.secrets).toEqual([{ name: 'LICENCE_KEY' }]);
    const value = await t.gql('{ secrets { name value } }', {}, team);
    expect(value.body.errors[0].message).toMatch(/Cannot query field "value"/);
    const deleted = await t.gql('mutation { deleteSecret(name: "LICENCE_KEY") }', {}, team);
    expect(deleted.body.data.deleteSecret).toBe('LICENCE_KEY');
    const missing = await t.gql('mutation { deleteSecret(name: "LICENCE_KEY") }', {}, team);
    expect(missing.body.errors[0].extensions.code).toBe('NOT_FOUND');
  });
});

describe('a model names the secrets it needs', () => {
  it('takes variable names, shows them in GraphQL and never in the legacy record', async () => {
    const created = await t
      .http()
      .post('/api/v1/models')
      .set('authorization', alice)
      .send({ name: 'Gated', container: 'c:1', args: {}, secrets: ['HF_TOKEN', 'LICENCE_KEY'] });
    expect(created.status).toBe(201);
    const rest = await t.http().get(`/api/v1/models/${created.body.id}`).set('authorization', bob);
    expect(rest.body.secrets).toBeUndefined();
    const gql = await t.gql('query ($id: ID!) { model(id: $id) { secrets } }', { id: created.body.id }, bob);
    expect(gql.body.data.model.secrets).toEqual(['HF_TOKEN', 'LICENCE_KEY']);
    const bad = await t
      .http()
      .put(`/api/v1/models/${created.body.id}`)
      .set('authorization', alice)
      .send({ secrets: ['not a name'] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details).toEqual({
      'secrets[0]': expect.stringMatching(/environment variable name/),
    });
  });
});

describe('values never leave', () => {
  it('are in no log line of all the above', () => {
    expect(logged.length).toBeGreaterThan(10);
    expect(logged.join('\n')).not.toContain(VALUE);
  });
});

describe('without a sealing key in production', () => {
  it('answers 503 instead of sealing with a key of its own', async () => {
    const prod = await startTestApp({
      NODE_ENV: 'production',
      ROLES: 'api',
      BRIDGE_SECRET_KEY: '',
      LOG_LEVEL: 'silent',
    });
    try {
      const auth = `Bearer ${await prod.tokenFor('secrets-prod')}`;
      const res = await prod
        .http()
        .put('/api/v1/secrets/HF_TOKEN')
        .set('authorization', auth)
        .send({ value: VALUE });
      expect(res.status).toBe(503);
      expect(res.body.error).toMatchObject({
        code: 'UNAVAILABLE',
        message: expect.stringMatching(/SEALING_KEY/),
      });
      expect((await prod.http().get('/api/v1/secrets').set('authorization', auth)).body).toEqual([]);
    } finally {
      await prod.close();
    }
  });
});
