import http from 'node:http';
import { exportJWK, generateKeyPair } from 'jose';
import Provider, { errors } from 'oidc-provider';
import { freePort } from '../src/db/embedded-postgres';
import { startTestApp, type TestApp } from './helpers/app';
import { Browser } from './helpers/browser';

/**
 * Signing in through a provider that follows RFC 8707 and knows nothing of Auth0's `audience`
 * (oidc-provider with resource indicators, as Glewlwyd behaves): the access token is a JWT for
 * the API only when the login URL names it as `resource`. Its ID token has no
 * `preferred_username`, so the username is the email (docs/login.md).
 */
const API = 'https://api.media.test';

let t: TestApp;
/** The same, sending only Auth0's `audience` (what the service did before). */
let auth0Only: TestApp;
let server: http.Server;

beforeAll(async () => {
  // oidc-provider prints notices about its development defaults (the interaction pages, TTLs):
  // this peer is a test's, so they say nothing here.
  jest.spyOn(console, 'info').mockImplementation(() => undefined);
  jest.spyOn(console, 'warn').mockImplementation(() => undefined);
  const [providerPort, appPort, otherPort] = [await freePort(), await freePort(), await freePort()];
  const issuer = `http://127.0.0.1:${providerPort}`;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const provider = new Provider(issuer, {
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] } as never,
    clients: [
      {
        client_id: 'media',
        client_secret: 'media-secret',
        redirect_uris: [appPort, otherPort].map((p) => `http://127.0.0.1:${p}/api/v1/auth/callback`),
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    findAccount: (_ctx, sub) => ({
      accountId: sub,
      claims: () => ({ sub, email: `${sub}@example.test`, email_verified: true }),
    }),
    features: {
      devInteractions: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // No resource asked for: no JWT for the API (an opaque token, as such providers answer).
        defaultResource: () => undefined as unknown as string,
        useGrantedResource: () => true,
        getResourceServerInfo(_ctx, indicator) {
          if (indicator !== API) throw new errors.InvalidTarget();
          return { scope: 'api', audience: API, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } };
        },
      },
    },
  });
  server = http.createServer(provider.callback());
  await new Promise<void>((r) => server.listen(providerPort, '127.0.0.1', r));
  const env = {
    OIDC_ISSUER: issuer,
    OIDC_AUDIENCE: API,
    OIDC_CLIENT_ID: 'media',
    OIDC_CLIENT_SECRET: 'media-secret',
    OIDC_SCOPES: 'openid email',
  };
  t = await startTestApp({ ...env, PORT: String(appPort) });
  auth0Only = await startTestApp({ ...env, PORT: String(otherPort), OIDC_AUDIENCE_PARAMETERS: 'audience' });
});
afterAll(async () => {
  jest.restoreAllMocks();
  await t?.close();
  await auth0Only?.close();
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
});

/** The first form's action and the values of its inputs, from a development interaction page. */
function form(html: string): { action: string; fields: Record<string, string> } {
  const action = /<form[^>]*action="([^"]+)"/.exec(html)![1];
  const fields: Record<string, string> = {};
  for (const [tag] of html.matchAll(/<input[^>]*>/g)) {
    const name = /name="([^"]+)"/.exec(tag)?.[1];
    if (name) fields[name] = /value="([^"]*)"/.exec(tag)?.[1] ?? '';
  }
  return { action, fields };
}

/** Logs in as an API client: the login URL, the provider's pages, then our callback's tokens. */
async function signInAs(app: TestApp, login: string) {
  const start = await app.http().get('/api/v1/auth/login').set('accept', 'application/json');
  expect(start.status).toBe(200);
  const browser = new Browser();
  let { res, url } = await browser.follow(await browser.get(start.body.login_url), start.body.login_url);
  // The provider's login page, then its consent page; then the redirect to our callback.
  for (let step = 0; step < 3 && res.status === 200; step++) {
    const page = form(await res.text());
    const target = new URL(page.action, url).toString();
    const posted = await browser.post(target, { ...page.fields, login, password: 'any' });
    ({ res, url } = await browser.follow(posted, target, '/api/v1/auth/callback'));
  }
  expect(new URL(url).pathname).toBe('/api/v1/auth/callback');
  return {
    loginUrl: new URL(start.body.login_url),
    callback: await browser.get(url, { accept: 'application/json' }),
  };
}

describe('an RFC 8707 provider', () => {
  it('signs in end to end: the access token is for OIDC_AUDIENCE, the username falls back to the email', async () => {
    const { loginUrl, callback } = await signInAs(t, 'trinity');
    expect(loginUrl.searchParams.get('resource')).toBe(API);
    const body = (await callback.json()) as { access_token: string; error?: unknown };
    expect(callback.status).toBe(200);
    const me = await t.gql('{ me { username email } }', {}, `Bearer ${body.access_token}`);
    expect(me.body.data.me).toEqual({ username: 'trinity@example.test', email: 'trinity@example.test' });
  });

  it('without `resource` the provider gives no token for the API, and the callback says so (502)', async () => {
    const { loginUrl, callback } = await signInAs(auth0Only, 'morpheus');
    expect(loginUrl.searchParams.has('resource')).toBe(false);
    expect(callback.status).toBe(502);
    expect(((await callback.json()) as { error: { code: string } }).error.code).toBe('BAD_GATEWAY');
  });
});
