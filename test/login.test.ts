import { freePort } from '../src/db/embedded-postgres';
import { startTestApp, type TestApp } from './helpers/app';
import { Browser, formAction, inputValue } from './helpers/browser';

/** The service with its built-in identity provider (no OIDC_ISSUER), on a port known in advance. */
async function startDevApp(env: Record<string, string> = {}): Promise<TestApp> {
  const port = await freePort();
  return startTestApp({
    OIDC_ISSUER: '',
    PORT: String(port),
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    ...env,
  });
}

interface SignedIn {
  browser: Browser;
  tokens: { access_token: string; refresh_token: string; id_token: string; token_type: string };
  callback: Response;
}

/** Opens the login URL in a browser and follows it to the provider's page. */
async function openLogin(t: TestApp, browser: Browser, version = 'v1') {
  const start = `${t.url}/api/${version}/auth/login`;
  const { res, url } = await browser.follow(await browser.get(start), start);
  expect(res.status).toBe(200);
  return { html: await res.text(), url };
}

/** Submits the page's form ending with `action`, then follows redirects up to the callback. */
async function submit(
  t: TestApp,
  browser: Browser,
  html: string,
  action: string,
  form: Record<string, string>,
) {
  const target = new URL(formAction(html, action)!, t.url).toString();
  const res = await browser.post(target, { csrf: inputValue(html, 'csrf')!, ...form });
  return browser.follow(res, target, '/api/v1/auth/callback');
}

async function signUp(t: TestApp, username: string, extra: Record<string, string> = {}): Promise<SignedIn> {
  const browser = new Browser();
  const { html, url } = await openLogin(t, browser);
  const signUpPage = await browser.get(
    new URL(html.match(/href="([^"]*view=sign-up)"/)![1].replace(/&amp;/g, '&'), url).toString(),
  );
  const page = await signUpPage.text();
  const { url: callbackUrl } = await submit(t, browser, page, '/sign-up', {
    username,
    password: 'a long password',
    ...extra,
  });
  const callback = await browser.get(callbackUrl, { accept: 'application/json' });
  expect(callback.status).toBe(200);
  return { browser, tokens: (await callback.clone().json()) as SignedIn['tokens'], callback };
}

describe('login with the built-in identity provider', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startDevApp();
  });
  afterAll(() => t.close());

  it('signs up in a browser, lands on the callback with tokens the API accepts', async () => {
    const { browser, tokens, callback } = await signUp(t, 'Alice', {
      email: 'alice@example.test',
      name: 'Alice A.',
    });
    expect(tokens).toEqual({
      access_token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
      refresh_token: expect.any(String),
      id_token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
      token_type: 'Bearer',
    });
    expect(tokens.refresh_token).not.toBe('');
    const sessionCookie = browser.setCookies.find((c) => c.startsWith('auth_session='))!;
    expect(sessionCookie).toMatch(/; HttpOnly/);
    expect(sessionCookie).toMatch(/; SameSite=Lax/);
    expect(sessionCookie).toMatch(/; Path=\//);
    expect(sessionCookie).not.toMatch(/Secure/);
    expect(callback.headers.get('cache-control')).toBe('no-store');

    const me = await t.gql('{ me { userId username email name } }', {}, `Bearer ${tokens.access_token}`);
    expect(me.body.data.me).toEqual({
      userId: 'alice',
      username: 'alice',
      email: 'alice@example.test',
      name: 'Alice A.',
    });

    const metadata = await browser.get(`${t.url}/api/v1/fetch-metadata`, { accept: 'application/json' });
    expect(metadata.status).toBe(200);
    expect(await metadata.json()).toMatchObject({ user_id: 'alice', email: 'alice@example.test' });
  });
});
