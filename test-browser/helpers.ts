import { mkdir } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { freePort } from '../src/db/embedded-postgres';
import { startTestApp, type TestApp } from '../test/helpers/app';

export const ARTIFACTS = path.join(__dirname, 'artifacts');
export const PASSWORD = 'a long password';

/**
 * A TCP proxy in front of the service: the browser reaches the service only through it, so a test
 * can cut the browser's websockets (and refuse new ones for a while) as a network would.
 */
export class Proxy {
  private readonly sockets = new Set<{ client: net.Socket; upstream: net.Socket; ws: boolean }>();
  /** While set, new websocket connections are dropped on arrival. */
  blockWebsockets = false;
  private server!: net.Server;
  port = 0;

  constructor(private readonly target: number) {}

  async start(port: number): Promise<void> {
    this.server = net.createServer((client) => {
      client.once('data', (first) => {
        const ws = /^upgrade:\s*websocket/im.test(first.toString('latin1'));
        if (ws && this.blockWebsockets) return client.destroy();
        const upstream = net.connect(this.target, '127.0.0.1');
        const entry = { client, upstream, ws };
        this.sockets.add(entry);
        upstream.write(first);
        client.pipe(upstream).pipe(client);
        const end = () => {
          this.sockets.delete(entry);
          client.destroy();
          upstream.destroy();
        };
        client.on('error', end).on('close', end);
        upstream.on('error', end).on('close', end);
      });
      client.on('error', () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    this.port = port;
  }

  /** Drops every open websocket, as a network failure would (no close frame). */
  cutWebsockets(): number {
    let n = 0;
    for (const s of this.sockets)
      if (s.ws) {
        s.client.destroy();
        s.upstream.destroy();
        n++;
      }
    return n;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) {
      s.client.destroy();
      s.upstream.destroy();
    }
    await new Promise((resolve) => this.server.close(resolve));
  }
}

export interface Harness {
  app: TestApp;
  proxy: Proxy;
  /** The URL the browser uses (the proxy's), which is the service's PUBLIC_URL. */
  url: string;
  browser: Browser;
  close(): Promise<void>;
}

/** The service with the built-in identity provider and the built web app, behind the proxy. */
export async function startHarness(env: Record<string, string> = {}): Promise<Harness> {
  await mkdir(ARTIFACTS, { recursive: true });
  const proxyPort = await freePort();
  const url = `http://127.0.0.1:${proxyPort}`;
  const app = await startTestApp({
    OIDC_ISSUER: '',
    OIDC_AUDIENCE: '',
    PUBLIC_URL: url,
    WEB_DIR: path.resolve(__dirname, '..', 'dist', 'web'),
    LOCAL_EXECUTOR_TRUST: 'any',
    ...env,
  });
  const proxy = new Proxy(app.port);
  await proxy.start(proxyPort);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    app,
    proxy,
    url,
    browser,
    close: async () => {
      await browser.close();
      await proxy.stop();
      await app.close();
    },
  };
}

/** Console errors and uncaught exceptions of a page: the normal paths make none. */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(`uncaught: ${e.message}`));
  return errors;
}

export interface Person {
  context: BrowserContext;
  page: Page;
  errors: string[];
  username: string;
}

/** A new browser context that signs up through the built-in provider and lands in the app. */
export async function signUp(
  h: Harness,
  username: string,
  viewport = { width: 1280, height: 860 },
): Promise<Person> {
  const context = await h.browser.newContext({ viewport, baseURL: h.url });
  const page = await context.newPage();
  const errors = watchErrors(page);
  await page.goto('/');
  // No session: the app's page sends the browser to the provider's sign-in page.
  await page.getByRole('link', { name: 'Create one' }).click();
  await page.getByLabel('Username', { exact: true }).fill(username);
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByRole('button', { name: /sign up|create/i }).click();
  await page.getByRole('heading', { name: 'Jobs', level: 1 }).waitFor();
  return { context, page, errors, username };
}

/** An access token of the person's session, asked for as the app does (same origin). */
export async function tokenOf(person: Person, teamId: string | null = null): Promise<string> {
  return person.page.evaluate(async (team) => {
    const res = await fetch('/api/v1/auth/token', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-requested-with': 'fetch' },
      body: JSON.stringify(team ? { team_id: team } : {}),
    });
    return ((await res.json()) as { access_token: string }).access_token;
  }, teamId);
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/**
 * Retries an assertion until it holds (a page changes as events arrive); throws the last failure
 * after `timeoutMs`, a bound on a wait, never a measured time.
 */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 30000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** A link of the main navigation. */
export function nav(page: Page, label: string) {
  return page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: label, exact: true });
}
