import { freePort } from '../../src/db/embedded-postgres';
import { startTestApp, type TestApp } from './app';
import { Browser, formAction, inputValue } from './browser';

/** Logins through the built-in identity provider, as a browser does them. */

/** The service with its built-in identity provider (no OIDC_ISSUER), on a port known in advance. */
export async function startDevApp(env: Record<string, string> = {}): Promise<TestApp> {
  const port = await freePort();
  return startTestApp({
    OIDC_ISSUER: '',
    PORT: String(port),
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    ...env,
  });
}

export type Tokens = { access_token: string; refresh_token: string; id_token: string; token_type: string };
export const PASSWORD = 'a long password';
export const JSON_ACCEPT = { accept: 'application/json' };

/** Opens the login URL as a browser does and follows it to the identity provider's page. */
export async function openLogin(base: string, browser: Browser, version = 'v1') {
  const start = `${base}/api/${version}/auth/login`;
  const { res, url } = await browser.follow(await browser.get(start), start);
  expect(res.status).toBe(200);
  return { html: await res.text(), url, res };
}

/** Submits the page's form whose action ends with `action` (with its CSRF token). */
export async function submit(
  browser: Browser,
  base: string,
  html: string,
  action: string,
  form: Record<string, string>,
) {
  const target = new URL(formAction(html, action)!, base).toString();
  const res = await browser.post(target, { csrf: inputValue(html, 'csrf')!, ...form });
  return { res, target };
}

/** Submits a form, then follows the redirects up to (not into) the callback; returns its URL. */
export async function submitToCallback(
  browser: Browser,
  base: string,
  html: string,
  action: string,
  form: Record<string, string>,
  version = 'v1',
): Promise<string> {
  const { res, target } = await submit(browser, base, html, action, form);
  const { url } = await browser.follow(res, target, `/api/${version}/auth/callback`);
  expect(new URL(url).pathname).toBe(`/api/${version}/auth/callback`);
  return url;
}

export async function signUpPage(base: string, browser: Browser, version = 'v1') {
  const { html, url } = await openLogin(base, browser, version);
  const link = /href="([^"]*view=sign-up)"/.exec(html)![1].replace(/&amp;/g, '&');
  const res = await browser.get(new URL(link, url).toString());
  expect(res.status).toBe(200);
  return res.text();
}

export async function callback(browser: Browser, url: string) {
  const res = await browser.get(url, JSON_ACCEPT);
  return { res, body: (await res.json()) as Tokens & { error?: { code: string; message: string } } };
}

export async function signUp(base: string, username: string, extra: Record<string, string> = {}) {
  const browser = new Browser();
  const page = await signUpPage(base, browser);
  const url = await submitToCallback(browser, base, page, '/sign-up', {
    username,
    password: PASSWORD,
    ...extra,
  });
  const { res, body } = await callback(browser, url);
  expect(res.status).toBe(200);
  return { browser, tokens: body, res };
}

export async function signIn(base: string, username: string, password = PASSWORD) {
  const browser = new Browser();
  const { html } = await openLogin(base, browser);
  const url = await submitToCallback(browser, base, html, '/sign-in', { username, password });
  const { res, body } = await callback(browser, url);
  expect(res.status).toBe(200);
  return { browser, tokens: body };
}
