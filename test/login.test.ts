import { chmod, mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { devAudience, devIssuerUrl, loadDevSigningKey, signUserToken } from '../src/auth/dev-issuer';
import { freePort } from '../src/db/embedded-postgres';
import { startTestApp, type TestApp } from './helpers/app';
import { Browser, formAction, inputValue } from './helpers/browser';
import { createTestDatabase } from './helpers/db';
import {
  callback,
  JSON_ACCEPT,
  openLogin,
  PASSWORD,
  signIn,
  signUp,
  signUpPage,
  startDevApp,
  submit,
  submitToCallback,
} from './helpers/login';
import { spawnService, spawnTs } from './helpers/process';
import { queryOverWebsocket } from './helpers/ws';

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const ME =
  '{ me { userId username email emailVerified name nickname picture phoneNumber createdAt updatedAt } }';

const refresh = (t: TestApp, refreshToken: unknown) =>
  t
    .http()
    .post('/api/v1/auth/refresh')
    .set('content-type', 'application/json')
    .send({ refresh_token: refreshToken });

describe('login with the built-in identity provider', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startDevApp();
  });
  afterAll(() => t.close());

  describe('starting the flow', () => {
    it.each(['v1', 'v2'])('gives an API client the login URL as JSON (%s)', async (version) => {
      const res = await t.http().get(`/api/${version}/auth/login`).set('accept', 'application/json');
      expect(res.status).toBe(200);
      expect(res.headers['set-cookie']).toBeUndefined();
      const url = new URL(res.body.login_url);
      expect(`${url.origin}${url.pathname}`).toBe(`${t.url}/oidc/auth`);
      expect(Object.fromEntries(url.searchParams)).toMatchObject({
        client_id: 'media-platform-dev',
        response_type: 'code',
        redirect_uri: `${t.url}/api/${version}/auth/callback`,
        code_challenge_method: 'S256',
        code_challenge: expect.stringMatching(/^[\w-]{43}$/),
        state: expect.stringMatching(/^[\w-]{43}$/),
        nonce: expect.stringMatching(/^[\w-]{43}$/),
        scope: 'openid profile email offline_access',
      });
    });

    it('redirects a browser to the provider and binds the flow to it with a cookie', async () => {
      const browser = new Browser();
      const res = await browser.get(`${t.url}/api/v2/auth/login`);
      expect(res.status).toBe(302);
      const location = new URL(res.headers.get('location')!);
      expect(location.pathname).toBe('/oidc/auth');
      expect(location.searchParams.get('redirect_uri')).toBe(`${t.url}/api/v2/auth/callback`);
      const binding = browser.setCookies.find((c) => c.startsWith('auth_login='))!;
      expect(binding).toMatch(/Path=\/api\/v2\/auth\/callback/);
      expect(binding).toMatch(/HttpOnly/);
      expect(binding).toMatch(/SameSite=Lax/);
    });

    it("shows the provider's own sign-in page: marked as development only, CSRF-protected, self-contained", async () => {
      const { html, res } = await openLogin(t.url, new Browser());
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(html).toContain('Development identity provider: not for production.');
      expect(inputValue(html, 'csrf')).toMatch(/^[\w-]{32}$/);
      expect(html).not.toMatch(/<script|<link|src="http/);
    });
  });

  describe('sign-up, callback and the session', () => {
    let alice: Awaited<ReturnType<typeof signUp>>;
    beforeAll(async () => {
      alice = await signUp(t.url, 'Alice', { email: 'alice@example.test', name: 'Alice <A.>' });
    });

    it('answers the callback with the Login tokens object and sets the session cookie', async () => {
      expect(alice.tokens).toEqual({
        access_token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
        refresh_token: expect.stringMatching(/^[\w-]{20,}$/),
        id_token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
        token_type: 'Bearer',
      });
      expect(alice.res.headers.get('cache-control')).toBe('no-store');
      const cookie = alice.browser.setCookies.find((c) => c.startsWith('auth_session='))!;
      expect(cookie).toMatch(/^auth_session=[\w-]{43};/);
      expect(cookie).toMatch(/; Path=\/(;|$)/);
      expect(cookie).toMatch(/; HttpOnly/);
      expect(cookie).toMatch(/; SameSite=Lax/);
      expect(cookie).not.toMatch(/Secure/);
      expect(Number(/Max-Age=(\d+)/.exec(cookie)![1])).toBeGreaterThan(13 * 24 * 3600);
      // The binding cookie is spent.
      expect(alice.browser.cookie('auth_login')).toBeUndefined();
    });

    it('issues a JWT access token for the API, signed with the development key', async () => {
      const key = await loadDevSigningKey(t.config.dataDir);
      expect(decodeProtectedHeader(alice.tokens.access_token)).toMatchObject({
        alg: 'RS256',
        kid: key.kid,
        typ: 'at+jwt',
      });
      expect(decodeJwt(alice.tokens.access_token)).toMatchObject({
        iss: `${t.url}/oidc`,
        aud: devAudience(t.config),
        sub: 'alice',
        preferred_username: 'alice',
        email: 'alice@example.test',
      });
      const lifetime = decodeJwt(alice.tokens.access_token);
      expect(lifetime.exp! - lifetime.iat!).toBe(3 * 24 * 3600);
      expect(decodeJwt(alice.tokens.id_token)).toMatchObject({ sub: 'alice', name: 'Alice <A.>' });
    });

    it('the access token works on /graphql and on the REST paths', async () => {
      const auth = `Bearer ${alice.tokens.access_token}`;
      const me = await t.gql('{ me { userId username email name } }', {}, auth);
      expect(me.body.data.me).toEqual({
        userId: 'alice',
        username: 'alice',
        email: 'alice@example.test',
        name: 'Alice <A.>',
      });
      const team = await t
        .http()
        .post('/api/v1/teams')
        .set('authorization', auth)
        .send({ name: 'Alice & co' });
      expect(team.status).toBe(201);
    });

    it('fetch-metadata answers the Identity metadata object for the cookie, the same data as `me`', async () => {
      const res = await alice.browser.get(`${t.url}/api/v1/fetch-metadata`, JSON_ACCEPT);
      expect(res.status).toBe(200);
      const metadata = (await res.json()) as Record<string, unknown>;
      expect(Object.keys(metadata).sort()).toEqual(
        [
          'created_at',
          'email',
          'email_verified',
          'name',
          'nickname',
          'phone_number',
          'picture',
          'updated_at',
          'user_id',
          'username',
        ].sort(),
      );
      expect(metadata).toMatchObject({
        user_id: 'alice',
        username: 'alice',
        email: 'alice@example.test',
        email_verified: false,
        name: 'Alice <A.>',
        nickname: '',
        picture: '',
        phone_number: '',
        created_at: expect.stringMatching(ISO_MS),
        updated_at: expect.stringMatching(ISO_MS),
      });
      const { me } = (await t.gql(ME, {}, `Bearer ${alice.tokens.access_token}`)).body.data;
      expect(metadata).toEqual({
        email: me.email,
        email_verified: me.emailVerified,
        username: me.username,
        phone_number: me.phoneNumber ?? '',
        user_id: me.userId,
        created_at: me.createdAt,
        updated_at: me.updatedAt,
        name: me.name,
        nickname: me.nickname ?? '',
        picture: me.picture ?? '',
      });
    });

    it('tokens of `npm run token` name the same user as the account of that username', async () => {
      const key = await loadDevSigningKey(t.config.dataDir);
      const token = await signUserToken(key, devIssuerUrl(t.config.publicUrl), devAudience(t.config), {
        sub: 'alice',
      });
      const viaScript = await t.gql('{ me { id } }', {}, `Bearer ${token}`);
      const viaLogin = await t.gql('{ me { id } }', {}, `Bearer ${alice.tokens.access_token}`);
      expect(viaScript.body.data.me.id).toBe(viaLogin.body.data.me.id);
      // A token without profile claims keeps the profile the login stored.
      const after = await alice.browser.get(`${t.url}/api/v1/fetch-metadata`, JSON_ACCEPT);
      expect(await after.json()).toMatchObject({ email: 'alice@example.test', name: 'Alice <A.>' });
    });

    it('keeps the provider state and the accounts in PostgreSQL, passwords as scrypt hashes', async () => {
      const conn = t.runtime.orm.em.fork().getConnection();
      const models = (
        await conn.execute<{ model: string }[]>('select distinct model from oidc_provider_state')
      ).map((r) => r.model);
      expect(models).toEqual(expect.arrayContaining(['Session', 'Grant', 'RefreshToken']));
      const [account] = await conn.execute<{ password_hash: string }[]>(
        "select password_hash from dev_accounts where username = 'alice'",
      );
      expect(account.password_hash).toMatch(/^scrypt\$/);
      const sessions = await conn.execute<{ id_hash: string }[]>('select id_hash from login_sessions');
      expect(sessions.map((s) => s.id_hash)).not.toContain(alice.browser.cookie('auth_session'));
    });
  });

  describe('sign-in', () => {
    beforeAll(async () => {
      await signUp(t.url, 'bob');
    });

    it('signs an existing account in, in a new browser, as the same user', async () => {
      const first = await signIn(t.url, 'bob');
      const second = await signIn(t.url, 'BOB');
      const ids = await Promise.all(
        [first, second].map(
          async (s) =>
            (await t.gql('{ me { id userId } }', {}, `Bearer ${s.tokens.access_token}`)).body.data.me,
        ),
      );
      expect(ids[0]).toEqual(ids[1]);
      expect(ids[0].userId).toBe('bob');
      expect(first.browser.cookie('auth_session')).not.toBe(second.browser.cookie('auth_session'));
    });

    it('shows the error on a wrong password and keeps the username, HTML-escaped', async () => {
      const browser = new Browser();
      const { html } = await openLogin(t.url, browser);
      const { res } = await submit(browser, t.url, html, '/sign-in', {
        username: 'bob"><b>x',
        password: 'wrong password',
      });
      expect(res.status).toBe(401);
      const page = await res.text();
      expect(page).toContain('wrong username or password');
      expect(page).toContain('value="bob&quot;&gt;&lt;b&gt;x"');
      expect(page).not.toContain('<b>x');
    });

    it('refuses a form without its CSRF token', async () => {
      const browser = new Browser();
      const { html } = await openLogin(t.url, browser);
      const target = new URL(formAction(html, '/sign-in')!, t.url).toString();
      const res = await browser.post(target, { username: 'bob', password: PASSWORD, csrf: 'forged' });
      expect(res.status).toBe(403);
      expect(res.headers.get('location')).toBeNull();
    });

    it('refuses a taken username at sign-up', async () => {
      const browser = new Browser();
      const page = await signUpPage(t.url, browser);
      const { res } = await submit(browser, t.url, page, '/sign-up', { username: 'bob', password: PASSWORD });
      expect(res.status).toBe(400);
      expect(await res.text()).toContain('this username is taken');
    });

    it('locks an account for a while after repeated failed sign-ins', async () => {
      await signUp(t.url, 'carol');
      const browser = new Browser();
      let { html } = await openLogin(t.url, browser);
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        const { res } = await submit(browser, t.url, html, '/sign-in', {
          username: 'carol',
          password: 'guess',
        });
        statuses.push(res.status);
        html = await res.text();
      }
      expect(statuses).toEqual([401, 401, 401, 401, 401]);
      const { res } = await submit(browser, t.url, html, '/sign-in', {
        username: 'carol',
        password: PASSWORD,
      });
      expect(res.status).toBe(429);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await res.text()).toContain('too many failed sign-ins');
    });

    it('cancelling the sign-in lands on the callback with a refusal', async () => {
      const browser = new Browser();
      const { html } = await openLogin(t.url, browser);
      const url = await submitToCallback(browser, t.url, html, '/cancel', {});
      const { res, body } = await callback(browser, url);
      expect(res.status).toBe(401);
      expect(body.error!.code).toBe('UNAUTHENTICATED');
      expect(body.error!.message).toContain('access_denied');
      expect(browser.cookie('auth_session')).toBeUndefined();
    });

    it('completes a flow started at the v2 path on the v2 callback', async () => {
      const browser = new Browser();
      const { html } = await openLogin(t.url, browser, 'v2');
      const url = await submitToCallback(
        browser,
        t.url,
        html,
        '/sign-in',
        { username: 'bob', password: PASSWORD },
        'v2',
      );
      const { res, body } = await callback(browser, url);
      expect(res.status).toBe(200);
      expect(body.token_type).toBe('Bearer');
    });
  });

  describe('callback checks', () => {
    beforeAll(async () => {
      await signUp(t.url, 'dave');
    });

    /** A sign-in stopped just before the callback: its URL carries the code and the state. */
    async function pendingCallback(browser = new Browser()) {
      const { html } = await openLogin(t.url, browser);
      const url = await submitToCallback(browser, t.url, html, '/sign-in', {
        username: 'dave',
        password: PASSWORD,
      });
      return { browser, url };
    }

    it('refuses an unknown or missing state', async () => {
      const { browser, url } = await pendingCallback();
      const forged = new URL(url);
      forged.searchParams.set('state', 'not-the-state');
      const bad = await callback(browser, forged.toString());
      expect(bad.res.status).toBe(400);
      expect(bad.body.error!.code).toBe('BAD_REQUEST');
      forged.searchParams.delete('state');
      expect((await callback(browser, forged.toString())).res.status).toBe(400);
      expect(browser.cookie('auth_session')).toBeUndefined();
    });

    it('refuses a replayed callback: a code and its state work once', async () => {
      const { browser, url } = await pendingCallback();
      expect((await callback(browser, url)).res.status).toBe(200);
      const replay = await callback(browser, url);
      expect(replay.res.status).toBe(400);
      expect(replay.body.error!.message).toMatch(/already used/);
    });

    it('refuses a state of the other callback version', async () => {
      const { browser, url } = await pendingCallback();
      const other = url.replace('/api/v1/', '/api/v2/');
      expect((await callback(browser, other)).res.status).toBe(400);
    });

    it('refuses to finish in another browser a login a browser started', async () => {
      const { url } = await pendingCallback();
      const elsewhere = await callback(new Browser(), url);
      expect(elsewhere.res.status).toBe(400);
      expect(elsewhere.body.error!.message).toMatch(/another browser/);
    });

    it('lets an API client start the login and any browser finish it', async () => {
      const start = await t.http().get('/api/v1/auth/login').set('accept', 'application/json');
      const browser = new Browser();
      const page = await browser.follow(await browser.get(start.body.login_url), start.body.login_url);
      const url = await submitToCallback(browser, t.url, await page.res.text(), '/sign-in', {
        username: 'dave',
        password: PASSWORD,
      });
      expect((await callback(browser, url)).res.status).toBe(200);
    });
  });

  describe('refresh and logout', () => {
    it('refreshes: new tokens the API accepts; the spent refresh token is refused', async () => {
      const { tokens } = await signUp(t.url, 'erin');
      const res = await refresh(t, tokens.refresh_token);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        access_token: expect.any(String),
        refresh_token: expect.any(String),
        id_token: expect.any(String),
        token_type: 'Bearer',
      });
      expect(res.body.refresh_token).not.toBe(tokens.refresh_token);
      const me = await t.gql('{ me { userId } }', {}, `Bearer ${res.body.access_token}`);
      expect(me.body.data.me.userId).toBe('erin');
      const spent = await refresh(t, tokens.refresh_token);
      expect(spent.status).toBe(401);
      expect(spent.body.error.code).toBe('UNAUTHENTICATED');
      expect((await refresh(t, res.body.refresh_token)).status).toBe(200);
    });

    it('asks for the refresh token', async () => {
      const res = await refresh(t, undefined);
      expect(res.status).toBe(400);
      expect(res.body.error.details).toHaveProperty('refresh_token');
      expect((await refresh(t, 'never-issued')).status).toBe(401);
    });

    it('logout ends the session: the cookie is cleared, metadata and refresh are refused', async () => {
      const { browser, tokens } = await signUp(t.url, 'frank');
      const res = await browser.request(`${t.url}/api/v1/auth/logout`, {
        method: 'POST',
        headers: JSON_ACCEPT,
      });
      expect(res.status).toBe(204);
      const cleared = browser.setCookies.filter((c) => c.startsWith('auth_session=')).pop()!;
      expect(cleared).toMatch(/^auth_session=;/);
      expect(cleared).toMatch(/Expires=Thu, 01 Jan 1970/);
      const cookie = `auth_session=${/^auth_session=([^;]+)/.exec(browser.setCookies.find((c) => c.startsWith('auth_session=') && !c.startsWith('auth_session=;'))!)![1]}`;
      const metadata = await t.http().get('/api/v1/fetch-metadata').set('cookie', cookie);
      expect(metadata.status).toBe(401);
      expect(metadata.body.error.code).toBe('UNAUTHENTICATED');
      expect((await refresh(t, tokens.refresh_token)).status).toBe(401);
      // Again, or with nothing to end: still fine.
      expect((await browser.request(`${t.url}/api/v1/auth/logout`, { method: 'POST' })).status).toBe(204);
    });

    it('logout by refresh token ends the session of an API client', async () => {
      const { browser, tokens } = await signUp(t.url, 'gina');
      const res = await t
        .http()
        .post('/api/v1/auth/logout')
        .set('content-type', 'application/json')
        .send({ refresh_token: tokens.refresh_token });
      expect(res.status).toBe(204);
      expect((await browser.get(`${t.url}/api/v1/fetch-metadata`, JSON_ACCEPT)).status).toBe(401);
    });
  });

  describe('return_to: back to the web app after signing in', () => {
    /** Signs a new account up in a browser from a login with `query`; answers the callback's answer. */
    async function signUpFrom(query: string, username: string, accept?: Record<string, string>) {
      const browser = new Browser();
      const start = `${t.url}/api/v1/auth/login${query}`;
      const { res: page, url } = await browser.follow(await browser.get(start), start);
      const link = /href="([^"]*view=sign-up)"/.exec(await page.text())![1].replace(/&amp;/g, '&');
      const html = await (await browser.get(new URL(link, url).toString())).text();
      const callbackUrl = await submitToCallback(browser, t.url, html, '/sign-up', {
        username,
        password: PASSWORD,
      });
      return { browser, res: await browser.get(callbackUrl, accept) };
    }

    it('sends the browser back to the path it asked for, signed in by the cookie', async () => {
      const { browser, res } = await signUpFrom(
        `?return_to=${encodeURIComponent('/jobs/7?tab=log#top')}`,
        'rita',
      );
      expect(res.status).toBe(303);
      expect(res.headers.get('location')).toBe('/jobs/7?tab=log#top');
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(await res.text()).not.toContain('access_token');
      expect(browser.cookie('auth_session')).toMatch(/^[\w-]{43}$/);
      expect((await browser.get(`${t.url}/api/v1/fetch-metadata`, JSON_ACCEPT)).status).toBe(200);
    });

    it('lands a browser in the app at / without return_to; an API client still gets the tokens', async () => {
      const { res } = await signUpFrom('', 'sam');
      expect(res.status).toBe(303);
      expect(res.headers.get('location')).toBe('/');
      const json = await signUpFrom(`?return_to=%2Fmedia-view`, 'tina', JSON_ACCEPT);
      expect(json.res.status).toBe(200);
      expect(await json.res.json()).toMatchObject({ token_type: 'Bearer', access_token: expect.any(String) });
    });

    it.each([
      ['another site', 'https://evil.example/'],
      ['a scheme-relative URL', '//evil.example/x'],
      ['a backslash host', '/\\evil.example'],
      ['a script URL', 'javascript:alert(1)'],
      ['a relative path', 'jobs'],
      ['control characters', '/a\r\nLocation: https://evil.example'],
      ['a tab that browsers strip', '/\t/evil.example'],
      ['a very long path', `/${'a'.repeat(3000)}`],
    ])('refuses %s as return_to, for browsers and API clients alike', async (_name, returnTo) => {
      for (const accept of ['text/html', 'application/json']) {
        const res = await t
          .http()
          .get('/api/v1/auth/login')
          .query({ return_to: returnTo })
          .set('accept', accept);
        expect(res.status).toBe(400);
        expect(res.body.error).toMatchObject({
          code: 'VALIDATION_FAILED',
          details: { return_to: expect.any(String) },
        });
        expect(res.headers.location).toBeUndefined();
      }
    });
  });

  describe("the web app's access token from the session", () => {
    const SAME_ORIGIN = {
      'x-requested-with': 'fetch',
      'sec-fetch-site': 'same-origin',
      accept: 'application/json',
    };
    const tokenOf = (
      browser: Browser,
      body: Record<string, unknown> = {},
      headers: Record<string, string> = SAME_ORIGIN,
    ) =>
      browser.request(`${t.url}/api/v1/auth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    let uma: Awaited<ReturnType<typeof signUp>>;
    beforeAll(async () => {
      uma = await signUp(t.url, 'uma');
    });

    it('answers a short-lived token for the session, which the API accepts, never cached', async () => {
      const res = await tokenOf(uma.browser);
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      const body = (await res.json()) as Record<string, unknown>;
      expect(body).toEqual({
        access_token: expect.stringMatching(/^mps_[\w-]{43}$/),
        token_type: 'Bearer',
        expires_in: expect.any(Number),
        team_id: null,
      });
      expect(body.expires_in).toBeGreaterThan(t.config.sessionTokenTtlSeconds - 10);
      expect(body.expires_in).toBeLessThanOrEqual(t.config.sessionTokenTtlSeconds);
      const me = await t.gql('{ me { userId teamId } }', {}, `Bearer ${body.access_token}`);
      expect(me.body.data.me).toEqual({ userId: 'uma', teamId: null });
      const teams = await t.http().get('/api/v1/teams').set('authorization', `Bearer ${body.access_token}`);
      expect(teams.status).toBe(200);
      // Only the hash is stored.
      const rows = await t.runtime.orm.em
        .fork()
        .getConnection()
        .execute<{ token_hash: string }[]>('select token_hash from session_tokens');
      expect(rows.map((r) => r.token_hash)).not.toContain(body.access_token);
    });

    it.each([
      ['from another site', { ...SAME_ORIGIN, 'sec-fetch-site': 'cross-site' }],
      ['from a sibling site', { ...SAME_ORIGIN, 'sec-fetch-site': 'same-site' }],
      ['from a top-level navigation', { ...SAME_ORIGIN, 'sec-fetch-site': 'none' }],
      ['with a foreign Origin', { ...SAME_ORIGIN, origin: 'https://evil.example' }],
      ['without the custom header (a form or a simple request)', { 'sec-fetch-site': 'same-origin' }],
    ])('refuses a request %s with 403, even with the cookie', async (_name, headers) => {
      const res = await tokenOf(uma.browser, {}, headers as Record<string, string>);
      expect(res.status).toBe(403);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('FORBIDDEN');
    });

    it('accepts the Origin of this service; refuses 401 without a live session', async () => {
      expect((await tokenOf(uma.browser, {}, { ...SAME_ORIGIN, origin: t.url })).status).toBe(200);
      const res = await tokenOf(new Browser());
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('UNAUTHENTICATED');
    });

    it("acts as one of the user's teams; another's team or a malformed id is 404", async () => {
      const userToken = `Bearer ${uma.tokens.access_token}`;
      const team = (
        await t.http().post('/api/v1/teams').set('authorization', userToken).send({ name: 'Uma Co' })
      ).body;
      const res = await tokenOf(uma.browser, { team_id: team.id });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { access_token: string; team_id: string };
      expect(body.team_id).toBe(team.id);
      const me = await t.gql('{ me { userId teamId } }', {}, `Bearer ${body.access_token}`);
      expect(me.body.data.me).toEqual({ userId: 'uma', teamId: team.id });
      // What it creates belongs to the team: the user's own view does not list it.
      const created = await t
        .http()
        .post('/api/v1/teams')
        .set('authorization', `Bearer ${body.access_token}`)
        .send({ name: 'nested' });
      expect(created.status).toBe(403);

      const other = await signUp(t.url, 'victor');
      const foreign = (
        await t
          .http()
          .post('/api/v1/teams')
          .set('authorization', `Bearer ${other.tokens.access_token}`)
          .send({ name: 'V' })
      ).body;
      for (const teamId of [foreign.id, 'not-a-uuid', 42]) {
        const refused = await tokenOf(uma.browser, { team_id: teamId });
        expect(refused.status).toBe(404);
      }
    });

    it('signing out ends the tokens at once, over HTTP and websockets', async () => {
      const { browser } = await signUp(t.url, 'wanda');
      const { access_token: token } = (await (await tokenOf(browser)).json()) as { access_token: string };
      expect(
        await queryOverWebsocket(t.url, { Authorization: `Bearer ${token}` }, '{ me { userId } }'),
      ).toEqual({
        data: { me: { userId: 'wanda' } },
      });
      expect((await browser.request(`${t.url}/api/v1/auth/logout`, { method: 'POST' })).status).toBe(204);
      const after = await t.gql('{ me { userId } }', {}, `Bearer ${token}`);
      expect(after.status).toBe(401);
      expect(after.body.error.code).toBe('UNAUTHENTICATED');
    });

    it('refuses an expired token and an unknown one', async () => {
      const { access_token: token } = (await (await tokenOf(uma.browser)).json()) as { access_token: string };
      expect((await t.gql('{ me { userId } }', {}, `Bearer ${token}`)).status).toBe(200);
      await t.runtime.orm.em
        .fork()
        .getConnection()
        .execute("update session_tokens set expires_at = now() - interval '1 second'");
      expect((await t.gql('{ me { userId } }', {}, `Bearer ${token}`)).status).toBe(401);
      expect((await t.gql('{ me { userId } }', {}, `Bearer mps_${'x'.repeat(43)}`)).status).toBe(401);
    });
  });

  describe('fetch-metadata without a session', () => {
    it.each([
      ['no cookie', undefined],
      ['an unknown cookie', 'auth_session=nope'],
    ])('answers 401 with %s', async (_name, cookie) => {
      const req = t.http().get('/api/v1/fetch-metadata');
      if (cookie) req.set('cookie', cookie);
      const res = await req;
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('UNAUTHENTICATED');
    });

    it('answers 401 to a bearer token alone: the endpoint takes the session cookie', async () => {
      const { tokens } = await signUp(t.url, 'hank');
      const res = await t
        .http()
        .get('/api/v1/fetch-metadata')
        .set('authorization', `Bearer ${tokens.access_token}`);
      expect(res.status).toBe(401);
    });
  });
});

describe('other login settings: a one-second session, client_secret_basic', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startDevApp({ SESSION_TTL_SECONDS: '1', OIDC_CLIENT_AUTH_METHOD: 'client_secret_basic' });
  });
  afterAll(() => t.close());

  it('signs in with OIDC_CLIENT_AUTH_METHOD=client_secret_basic', async () => {
    const { tokens } = await signUp(t.url, 'jill');
    expect(tokens.token_type).toBe('Bearer');
  });

  it('an expired session is refused by fetch-metadata and refresh once its time is up', async () => {
    const { browser, tokens } = await signUp(t.url, 'ivy');
    const session = browser.setCookies.find((c) => c.startsWith('auth_session='))!;
    expect(session).toMatch(/Max-Age=1;/);
    const cookie = session.split(';')[0];
    await new Promise((r) => setTimeout(r, 1500));
    const res = await t.http().get('/api/v1/fetch-metadata').set('cookie', cookie);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('UNAUTHENTICATED');
    expect((await refresh(t, tokens.refresh_token)).status).toBe(401);
  });
});

describe('an identity provider that is down or broken', () => {
  async function loginOf(issuer: string, env: Record<string, string> = {}) {
    const t = await startTestApp({ OIDC_ISSUER: issuer, ...env });
    try {
      const res = await t.http().get('/api/v1/auth/login').set('accept', 'application/json');
      const health = await t.http().get('/healthz');
      expect(health.status).toBe(200);
      return res;
    } finally {
      await t.close();
    }
  }

  it('answers 503 when nothing listens at OIDC_ISSUER, and keeps serving', async () => {
    const port = await freePort();
    const res = await loginOf(`http://127.0.0.1:${port}`);
    expect(res.status).toBe(503);
    expect(res.body.error).toEqual({
      code: 'UNAVAILABLE',
      message: 'the identity provider is unreachable, try again shortly',
    });
    expect(res.headers['retry-after']).toBe('5');
  });

  it('answers 503 within OIDC_TIMEOUT_SECONDS when the provider never answers', async () => {
    const sockets = new Set<net.Socket>();
    const silent = net.createServer((s) => sockets.add(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const res = await loginOf(`http://127.0.0.1:${(silent.address() as net.AddressInfo).port}`, {
        OIDC_TIMEOUT_SECONDS: '1',
      });
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('UNAVAILABLE');
    } finally {
      sockets.forEach((s) => s.destroy());
      await new Promise((r) => silent.close(r));
    }
  });

  it('answers 502 when the provider answers garbage, and retries discovery on the next request', async () => {
    let healthy = false;
    const server = http.createServer((req, res) => {
      if (!healthy) {
        res.statusCode = 500;
        return res.end('<html>oops</html>');
      }
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          issuer,
          authorization_endpoint: `${issuer}/authorize`,
          token_endpoint: `${issuer}/token`,
          jwks_uri: `${issuer}/jwks`,
        }),
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const issuer = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    const t = await startTestApp({ OIDC_ISSUER: issuer });
    try {
      const broken = await t.http().get('/api/v1/auth/login').set('accept', 'application/json');
      expect(broken.status).toBe(502);
      expect(broken.body.error.code).toBe('BAD_GATEWAY');
      healthy = true;
      const res = await t.http().get('/api/v1/auth/login').set('accept', 'application/json');
      expect(res.status).toBe(200);
      expect(res.body.login_url).toMatch(new RegExp(`^${issuer}/authorize\\?`));
    } finally {
      await t.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('the service process on its own (what `npm start` runs)', () => {
  it('a newcomer signs up in a browser, and `npm run token` tokens name the same user', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'media-login-'));
    await chmod(dataDir, 0o755);
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = {
      DATABASE_URL: await createTestDatabase(),
      DATA_DIR: dataDir,
      PORT: String(port),
      PUBLIC_URL: base,
    };
    const svc = await spawnService(env);
    try {
      expect(svc.output()).toContain('built-in development identity provider');
      const { browser, tokens } = await signUp(base, 'newcomer', { name: 'New Comer' });
      const metadata = await browser.get(`${base}/api/v1/fetch-metadata`, JSON_ACCEPT);
      expect(await metadata.json()).toMatchObject({ user_id: 'newcomer', name: 'New Comer' });

      const script = spawnTs('scripts/token.ts', ['newcomer'], env);
      const token = (await script.waitFor(/^ey/)).trim();
      expect(await script.exited).toBe(0);
      const me = async (auth: string) => {
        const res = await fetch(`${base}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${auth}` },
          body: JSON.stringify({ query: '{ me { id userId } }' }),
        });
        return ((await res.json()) as { data: { me: { id: string; userId: string } } }).data.me;
      };
      const [fromLogin, fromScript] = [await me(tokens.access_token), await me(token)];
      expect(fromLogin.userId).toBe('newcomer');
      expect(fromScript).toEqual(fromLogin);
    } finally {
      svc.child.kill('SIGTERM');
      await svc.exited;
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('the login URL names the API to any provider', () => {
  let server: http.Server;
  let issuer: string;
  beforeAll(async () => {
    // Discovery only: the login URL is built from the provider's authorization endpoint.
    server = http.createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          issuer,
          authorization_endpoint: `${issuer}/authorize`,
          token_endpoint: `${issuer}/token`,
          jwks_uri: `${issuer}/jwks`,
        }),
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    issuer = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  async function loginParams(env: Record<string, string>) {
    const t = await startTestApp({ OIDC_ISSUER: issuer, ...env });
    try {
      const res = await t.http().get('/api/v1/auth/login').set('accept', 'application/json');
      expect(res.status).toBe(200);
      return new URL(res.body.login_url).searchParams;
    } finally {
      await t.close();
    }
  }

  it("sends RFC 8707's resource and Auth0's audience by default", async () => {
    const params = await loginParams({ OIDC_AUDIENCE: 'https://api.media.test' });
    expect(params.get('resource')).toBe('https://api.media.test');
    expect(params.get('audience')).toBe('https://api.media.test');
  });

  it('sends only what OIDC_AUDIENCE_PARAMETERS names; resource only for an absolute URI', async () => {
    const only = await loginParams({
      OIDC_AUDIENCE: 'https://api.media.test',
      OIDC_AUDIENCE_PARAMETERS: 'resource',
    });
    expect(only.get('resource')).toBe('https://api.media.test');
    expect(only.has('audience')).toBe(false);
    const none = await loginParams({
      OIDC_AUDIENCE: 'https://api.media.test',
      OIDC_AUDIENCE_PARAMETERS: 'none',
    });
    expect(none.has('resource') || none.has('audience')).toBe(false);
    // RFC 8707 takes absolute URIs only: a plain name goes as Auth0's audience alone.
    const plain = await loginParams({ OIDC_AUDIENCE: 'media-platform' });
    expect(plain.has('resource')).toBe(false);
    expect(plain.get('audience')).toBe('media-platform');
  });
});
