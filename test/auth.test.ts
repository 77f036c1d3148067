import { createHmac } from 'node:crypto';
import { SignJWT, generateKeyPair } from 'jose';
import { startTestApp, type TestApp } from './helpers/app';
import { TestIssuer } from './helpers/oidc-issuer';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const ME = '{ me { id userId username email teamId } }';
const bearer = (token: string) => `Bearer ${token}`;

function b64url(input: string | Buffer) {
  return Buffer.from(input).toString('base64url');
}

describe('user tokens', () => {
  it('accepts a token of the configured issuer and creates the user from its claims', async () => {
    const res = await t.gql(
      ME,
      {},
      bearer(await t.tokenFor('alice', { preferred_username: 'alice.a', email: 'a@x.test' })),
    );
    expect(res.status).toBe(200);
    expect(res.body.data.me).toMatchObject({
      userId: 'alice',
      username: 'alice.a',
      email: 'a@x.test',
      teamId: null,
    });
  });

  it('updates the profile when the claims change, keyed by sub', async () => {
    const first = await t.gql(ME, {}, bearer(await t.tokenFor('bob', { preferred_username: 'bob1' })));
    const second = await t.gql(ME, {}, bearer(await t.tokenFor('bob', { preferred_username: 'bob2' })));
    expect(second.body.data.me.id).toBe(first.body.data.me.id);
    expect(second.body.data.me.username).toBe('bob2');
  });

  it('keeps the profile fields whose claims a token does not carry (access tokens often carry none)', async () => {
    await t.gql(
      ME,
      {},
      bearer(await t.tokenFor('kim', { preferred_username: 'kim.k', email: 'k@x.test', name: 'Kim' })),
    );
    const bare = await t.issuer.token('kim', { claims: { preferred_username: undefined, email: undefined } });
    const kept = await t.gql('{ me { username email name } }', {}, bearer(bare));
    expect(kept.body.data.me).toEqual({ username: 'kim.k', email: 'k@x.test', name: 'Kim' });
    const changed = await t.gql(
      '{ me { username email name } }',
      {},
      bearer(await t.issuer.token('kim', { claims: { preferred_username: undefined, email: 'new@x.test' } })),
    );
    expect(changed.body.data.me).toEqual({ username: 'kim.k', email: 'new@x.test', name: 'Kim' });
  });

  it('accepts an issuer whose identifier ends with a slash (Auth0)', async () => {
    const issuer = await TestIssuer.start({ trailingSlash: true });
    const app = await startTestApp({}, { issuer });
    try {
      expect(app.config.oidcIssuer).toBe(issuer.issuer);
      const res = await app.gql(ME, {}, bearer(await issuer.token('slash')));
      expect(res.body.data.me.userId).toBe('slash');
    } finally {
      await app.close();
      await issuer.stop();
    }
  });

  const rejected: [string, () => Promise<string>][] = [
    ['a wrong issuer', () => t.issuer.token('eve', { issuer: 'http://evil.test' })],
    ['a wrong audience', () => t.issuer.token('eve', { audience: 'someone-else' })],
    ['an expired token', () => t.issuer.token('eve', { expiresIn: Math.floor(Date.now() / 1000) - 120 })],
    [
      'a token not yet valid',
      () => t.issuer.token('eve', { notBefore: Math.floor(Date.now() / 1000) + 600 }),
    ],
    [
      'alg none',
      async () =>
        `${b64url(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${b64url(JSON.stringify({ sub: 'eve', iss: t.issuer.issuer, aud: 'media-platform-test', exp: Math.floor(Date.now() / 1000) + 600 }))}.`,
    ],
    [
      'an HS256 token',
      async () => {
        const header = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT', kid: 'k1' }));
        const payload = b64url(
          JSON.stringify({
            sub: 'eve',
            iss: t.issuer.issuer,
            aud: 'media-platform-test',
            exp: Math.floor(Date.now() / 1000) + 600,
          }),
        );
        const sig = createHmac('sha256', 'secret').update(`${header}.${payload}`).digest('base64url');
        return `${header}.${payload}.${sig}`;
      },
    ],
    [
      'a tampered payload',
      async () => {
        const [h, , s] = (await t.tokenFor('eve')).split('.');
        const payload = b64url(
          JSON.stringify({
            sub: 'admin',
            iss: t.issuer.issuer,
            aud: 'media-platform-test',
            exp: Math.floor(Date.now() / 1000) + 600,
          }),
        );
        return `${h}.${payload}.${s}`;
      },
    ],
    [
      'a token signed by an unknown key',
      async () => {
        const { privateKey } = await generateKeyPair('RS256');
        return new SignJWT({})
          .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
          .setSubject('eve')
          .setIssuer(t.issuer.issuer)
          .setAudience('media-platform-test')
          .setExpirationTime('1h')
          .sign(privateKey);
      },
    ],
    ['garbage', async () => 'not-a-jwt'],
  ];

  it.each(rejected)('refuses %s with 401 and the error body, on REST and GraphQL', async (_name, make) => {
    const token = await make();
    const gql = await t.gql(ME, {}, bearer(token));
    expect(gql.status).toBe(401);
    expect(gql.body.error.code).toBe('UNAUTHENTICATED');
    const rest = await t.http().get('/api/v1/tokens').set('authorization', bearer(token));
    expect(rest.status).toBe(401);
    expect(rest.body).toEqual({ error: { code: 'UNAUTHENTICATED', message: expect.any(String) } });
  });

  it('answers 401 to a request without credentials', async () => {
    const rest = await t.http().get('/api/v1/tokens');
    expect(rest.status).toBe(401);
    expect(rest.body.error.code).toBe('UNAUTHENTICATED');
    const gql = await t.gql(ME);
    expect(gql.status).toBe(401);
    expect(gql.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
  });

  it('refuses an unsupported Authorization scheme', async () => {
    const res = await t.http().get('/api/v1/tokens').set('authorization', 'Basic dXNlcjpwYXNz');
    expect(res.status).toBe(401);
  });
});

describe('API keys', () => {
  let userToken: string;
  beforeAll(async () => {
    userToken = await t.tokenFor('dave');
  });

  it('creates a key shown once, usable in the header and as Bearer, and dead right after revocation', async () => {
    const created = await t
      .http()
      .post('/api/v1/tokens')
      .set('authorization', bearer(userToken))
      .send({ name: 'ci' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      name: 'ci',
      team_id: null,
      role: null,
      created_by: { user_id: expect.any(String), username: expect.any(String) },
      token: expect.stringMatching(/^[0-9a-f-]{36}$/),
      created_at: expect.any(String),
      last_used_at: null,
      revoked_at: null,
    });
    const key = created.body.token as string;
    const viaHeaderRes = await t.http().post('/graphql').set('x-service-key', key).send({ query: ME });
    expect(viaHeaderRes.body.data.me.userId).toBe('dave');
    const viaBearer = await t.gql(ME, {}, bearer(key));
    expect(viaBearer.body.data.me.userId).toBe('dave');

    const list = await t.http().get('/api/v1/tokens').set('x-service-key', key);
    expect(list.status).toBe(200);
    expect(list.body.map((k: { id: string }) => k.id)).toContain(created.body.id);
    expect(JSON.stringify(list.body)).not.toContain(key);

    const revoke = await t
      .http()
      .delete(`/api/v1/tokens/${created.body.id}`)
      .set('authorization', bearer(userToken));
    expect(revoke.status).toBe(204);
    expect(revoke.text).toBe('');
    const after = await t.http().get('/api/v1/tokens').set('x-service-key', key);
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('UNAUTHENTICATED');
    const afterBearer = await t.gql(ME, {}, bearer(key));
    expect(afterBearer.status).toBe(401);
  });

  it('refuses an unknown key and a malformed key', async () => {
    expect(
      (await t.http().get('/api/v1/tokens').set('x-service-key', '6f1c2c1e-9a51-4b8e-9f0e-3f0b7b6f7e11'))
        .status,
    ).toBe(401);
    expect((await t.http().get('/api/v1/tokens').set('x-service-key', 'nope')).status).toBe(401);
  });

  it('refuses two credentials at once', async () => {
    const created = await t
      .http()
      .post('/api/v1/tokens')
      .set('authorization', bearer(userToken))
      .send({ name: 'two' });
    const res = await t
      .http()
      .get('/api/v1/tokens')
      .set('authorization', bearer(userToken))
      .set('x-service-key', created.body.token);
    expect(res.status).toBe(401);
  });

  it('validates the name and answers 404 for a foreign or unknown key id', async () => {
    const bad = await t
      .http()
      .post('/api/v1/tokens')
      .set('authorization', bearer(userToken))
      .send({ name: '' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_FAILED');
    expect(bad.body.error.details).toEqual({ name: 'is required' });
    const wrongType = await t
      .http()
      .post('/api/v1/tokens')
      .set('authorization', bearer(userToken))
      .send({ name: 42 });
    expect(wrongType.status).toBe(400);

    const mine = await t
      .http()
      .post('/api/v1/tokens')
      .set('authorization', bearer(userToken))
      .send({ name: 'mine' });
    const other = await t.tokenFor('mallory');
    expect(
      (await t.http().delete(`/api/v1/tokens/${mine.body.id}`).set('authorization', bearer(other))).status,
    ).toBe(404);
    expect(
      (await t.http().delete('/api/v1/tokens/not-a-uuid').set('authorization', bearer(other))).status,
    ).toBe(404);
    // Still alive: the foreign attempt changed nothing.
    expect((await t.http().get('/api/v1/tokens').set('x-service-key', mine.body.token)).status).toBe(200);
  });

  it('pages the key list with limit and cursor, linking the next page', async () => {
    const token = await t.tokenFor('pager');
    for (let i = 0; i < 5; i++)
      await t
        .http()
        .post('/api/v1/tokens')
        .set('authorization', bearer(token))
        .send({ name: `k${i}` });
    const first = await t.http().get('/api/v1/tokens?limit=2').set('authorization', bearer(token));
    expect(first.body.map((k: { name: string }) => k.name)).toEqual(['k4', 'k3']);
    const next = /<([^>]+)>; rel="next"/.exec(first.headers.link)![1];
    const second = await t.http().get(next).set('authorization', bearer(token));
    expect(second.body.map((k: { name: string }) => k.name)).toEqual(['k2', 'k1']);
    const bad = await t.http().get('/api/v1/tokens?cursor=zzz').set('authorization', bearer(token));
    expect(bad.status).toBe(400);
    // Well-formed but forged: the id is not a UUID, so it never reaches the database.
    const forged = Buffer.from(JSON.stringify([new Date().toISOString(), 'x'])).toString('base64url');
    const res = await t.http().get(`/api/v1/teams?cursor=${forged}`).set('authorization', bearer(token));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
  });
});

describe('teams and organisation tokens', () => {
  it('keeps team and user resources apart', async () => {
    const owner = bearer(await t.tokenFor('erin'));
    const team = await t.http().post('/api/v1/teams').set('authorization', owner).send({ name: 'Acme' });
    expect(team.status).toBe(201);
    expect(team.body).toEqual({
      id: expect.any(String),
      name: 'Acme',
      role: 'owner',
      created_at: expect.any(String),
    });

    const personal = await t
      .http()
      .post('/api/v1/tokens')
      .set('authorization', owner)
      .send({ name: 'personal' });
    const teamKey = await t
      .http()
      .post('/api/v1/tokens')
      .set('authorization', owner)
      .send({ name: 'acme-ci', team_id: team.body.id });
    expect(teamKey.status).toBe(201);
    expect(teamKey.body.team_id).toBe(team.body.id);

    // The team token is the team, and is told it is a team. Its role (`member` by default) does
    // not manage the team's keys: only admins and owners list them (docs/teams.md).
    const asTeam = await t.http().get('/api/v1/tokens').set('x-service-key', teamKey.body.token);
    expect(asTeam.status).toBe(403);
    const asOwner = await t.http().get(`/api/v1/tokens?team_id=${team.body.id}`).set('authorization', owner);
    expect(asOwner.body.map((k: { name: string }) => k.name)).toEqual(['acme-ci']);
    const me = await t.http().post('/graphql').set('x-service-key', teamKey.body.token).send({ query: ME });
    expect(me.body.data.me.teamId).toBe(team.body.id);

    // The user token sees the user's keys only.
    const asUser = await t.http().get('/api/v1/tokens').set('authorization', owner);
    const names = asUser.body.map((k: { name: string }) => k.name);
    expect(names).toContain('personal');
    expect(names).not.toContain('acme-ci');

    // A team token cannot reach a user's key, nor a user token a team's key, by id.
    expect(
      (await t.http().delete(`/api/v1/tokens/${personal.body.id}`).set('x-service-key', teamKey.body.token))
        .status,
    ).toBe(404);
    const stranger = bearer(await t.tokenFor('frank'));
    expect(
      (await t.http().delete(`/api/v1/tokens/${teamKey.body.id}`).set('authorization', stranger)).status,
    ).toBe(404);

    // Team tokens cannot mint keys or teams.
    expect(
      (await t.http().post('/api/v1/tokens').set('x-service-key', teamKey.body.token).send({ name: 'x' }))
        .status,
    ).toBe(403);
    expect(
      (await t.http().post('/api/v1/teams').set('x-service-key', teamKey.body.token).send({ name: 'x' }))
        .status,
    ).toBe(403);

    // Somebody else cannot create keys for the team.
    const foreign = await t
      .http()
      .post('/api/v1/tokens')
      .set('authorization', stranger)
      .send({ name: 'x', team_id: team.body.id });
    expect(foreign.status).toBe(404);

    // Listing teams: the owner sees it, a stranger does not.
    const mine = await t.http().get('/api/v1/teams').set('authorization', owner);
    expect(mine.body.map((x: { id: string }) => x.id)).toEqual([team.body.id]);
    expect((await t.http().get('/api/v1/teams').set('authorization', stranger)).body).toEqual([]);

    // The owner can list and revoke the team's keys through the user token.
    const teamKeys = await t.http().get(`/api/v1/tokens?team_id=${team.body.id}`).set('authorization', owner);
    expect(teamKeys.body.map((k: { name: string }) => k.name)).toEqual(['acme-ci']);
    expect(
      (await t.http().delete(`/api/v1/tokens/${teamKey.body.id}`).set('authorization', owner)).status,
    ).toBe(204);
    expect((await t.http().get('/api/v1/tokens').set('x-service-key', teamKey.body.token)).status).toBe(401);
  });

  it('offers the same through GraphQL', async () => {
    const auth = bearer(await t.tokenFor('gina'));
    const team = await t.gql(
      'mutation($n: String!) { createTeam(input: { name: $n }) { id name role } }',
      { n: 'Gx' },
      auth,
    );
    expect(team.body.data.createTeam).toMatchObject({ name: 'Gx', role: 'OWNER' });
    const key = await t.gql(
      'mutation($t: ID) { createApiKey(input: { name: "k", teamId: $t }) { value apiKey { id teamId } } }',
      { t: team.body.data.createTeam.id },
      auth,
    );
    expect(key.body.data.createApiKey.apiKey.teamId).toBe(team.body.data.createTeam.id);
    const teams = await t.gql('{ teams { nodes { id } pageInfo { hasNextPage } } }', {}, auth);
    expect(teams.body.data.teams.nodes).toHaveLength(1);
  });
});

describe('HTTP behaviour', () => {
  it('answers malformed JSON with 400 and the error body', async () => {
    const auth = bearer(await t.tokenFor('henry'));
    const res = await t
      .http()
      .post('/api/v1/tokens')
      .set('authorization', auth)
      .set('content-type', 'application/json')
      .send('{"name": ');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: { code: 'BAD_REQUEST', message: expect.any(String) } });
    const gql = await t
      .http()
      .post('/graphql')
      .set('authorization', auth)
      .set('content-type', 'application/json')
      .send('{oops');
    expect(gql.status).toBe(400);
  });

  it('accepts the versioned content type and answers in it when asked', async () => {
    const auth = bearer(await t.tokenFor('ivy'));
    const res = await t
      .http()
      .post('/api/v1/teams')
      .set('authorization', auth)
      .set('content-type', 'application/service.rest.v1+json')
      .set('accept', 'application/service.rest.v1+json')
      .send(JSON.stringify({ name: 'Versioned' }));
    expect(res.status).toBe(201);
    expect(res.headers['content-type']).toMatch(/^application\/service\.rest\.v1\+json/);
    expect(JSON.parse(res.text).name).toBe('Versioned');
    const plain = await t.http().get('/api/v1/teams').set('authorization', auth);
    expect(plain.headers['content-type']).toMatch(/^application\/json/);
  });

  it('answers a body of another content type with 415', async () => {
    const res = await t
      .http()
      .post('/api/v1/teams')
      .set('authorization', bearer(await t.tokenFor('lee')))
      .set('content-type', 'text/plain')
      .send('name=x');
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('answers unknown paths with a JSON 404', async () => {
    const res = await t
      .http()
      .get('/api/v1/nothing-here')
      .set('authorization', bearer(await t.tokenFor('jack')));
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('NOT_FOUND');
    const anon = await t.http().get('/nothing');
    expect(anon.status).toBe(404);
    expect(anon.body.error.code).toBe('NOT_FOUND');
  });

  it('bounds request bodies with 413', async () => {
    const res = await t
      .http()
      .post('/api/v1/teams')
      .set('authorization', bearer(await t.tokenFor('kim')))
      .send({ name: 'x'.repeat(2 * 1024 * 1024) });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('returns a request id header and honours a sane incoming one', async () => {
    const res = await t.http().get('/healthz').set('x-request-id', 'abc-123');
    expect(res.headers['x-request-id']).toBe('abc-123');
    const fresh = await t.http().get('/healthz').set('x-request-id', 'bad id with spaces');
    expect(fresh.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('reports health and readiness', async () => {
    expect((await t.http().get('/healthz')).body).toEqual({ status: 'ok' });
    expect((await t.http().get('/readyz')).body).toEqual({ status: 'ready' });
  });
});

describe('signing key rotation', () => {
  it('refetches the JWKS on an unknown kid, at most once per cooldown', async () => {
    const app = await startTestApp({ OIDC_JWKS_COOLDOWN_SECONDS: '2' });
    try {
      const next = await app.issuer.nextKey();
      expect((await app.gql(ME, {}, bearer(await app.tokenFor('carol')))).status).toBe(200);
      expect(app.issuer.jwksFetches).toBe(1);
      await app.issuer.rotateKey(next);
      const rotated = bearer(await app.tokenFor('carol'));
      // Within the cooldown the new kid is unknown and the JWKS is not hammered.
      expect((await app.gql(ME, {}, rotated)).status).toBe(401);
      expect(app.issuer.jwksFetches).toBe(1);
      await new Promise((r) => setTimeout(r, 2100));
      const res = await app.gql(ME, {}, rotated);
      expect(res.status).toBe(200);
      expect(res.body.data.me.userId).toBe('carol');
      expect(app.issuer.jwksFetches).toBe(2);
    } finally {
      await app.close();
    }
  });
});
