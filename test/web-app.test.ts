import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { brotliCompressSync, brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { startTestApp, type TestApp } from './helpers/app';
import { queryOverWebsocket } from './helpers/ws';

/** A raw GET: the body as sent (still compressed), and the headers. */
function get(url: string, headers: Record<string, string>) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>(
    (resolve, reject) => {
      http
        .get(url, { headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }),
          );
        })
        .on('error', reject);
    },
  );
}

const INDEX =
  '<!doctype html><title>app</title><script type="module" src="/assets/index-abc123.js"></script>';
const SCRIPT = `console.log(${JSON.stringify('x'.repeat(2000))});`;
const HTML = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };
const SIGNED_IN = { ...HTML, cookie: 'auth_session=whatever' };

/** A build as `npm run build:web` writes it: hashed assets, each with its .br and .gz copies. */
async function fixtureBuild(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'web-build-'));
  await mkdir(path.join(dir, 'assets'));
  const files: Record<string, string> = { 'index.html': INDEX, 'assets/index-abc123.js': SCRIPT };
  for (const [name, content] of Object.entries(files)) {
    await writeFile(path.join(dir, name), content);
    await writeFile(path.join(dir, `${name}.br`), brotliCompressSync(content));
    await writeFile(path.join(dir, `${name}.gz`), gzipSync(content));
  }
  return dir;
}

describe('the web app served at /', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ WEB_DIR: await fixtureBuild() });
  });
  afterAll(() => t.close());

  it('sends a browser without a session through the login flow, back to the page it asked for', async () => {
    for (const [from, back] of [
      ['/', '/'],
      ['/jobs/1234?tab=log', '/jobs/1234?tab=log'],
    ]) {
      const res = await get(`${t.url}${from}`, HTML);
      expect(res.status).toBe(302);
      expect(res.headers.location).toBe(`/api/v1/auth/login?return_to=${encodeURIComponent(back)}`);
    }
    // The signed-out page is the one page shown without a session.
    expect((await get(`${t.url}/signed-out`, HTML)).status).toBe(200);
  });

  it('answers every app path with the page, compressed as the browser accepts, never cached stale', async () => {
    for (const [encoding, decode] of [
      ['br', brotliDecompressSync],
      ['gzip', gunzipSync],
    ] as const) {
      for (const p of ['/', '/jobs/42', '/files', '/account']) {
        const res = await get(`${t.url}${p}`, { ...SIGNED_IN, 'accept-encoding': `${encoding}, deflate` });
        expect(res.status).toBe(200);
        expect(res.headers['content-encoding']).toBe(encoding);
        expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
        expect(res.headers['cache-control']).toBe('no-cache');
        expect(res.headers.vary).toMatch(/Accept-Encoding/i);
        expect(decode(res.body).toString()).toBe(INDEX);
      }
    }
    const plain = await get(`${t.url}/`, { ...SIGNED_IN, 'accept-encoding': 'identity' });
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.body.toString()).toBe(INDEX);
    const csp = plain.headers['content-security-policy'] as string;
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(plain.headers['x-content-type-options']).toBe('nosniff');
  });

  it('serves hashed assets for a year, compressed', async () => {
    const res = await get(`${t.url}/assets/index-abc123.js`, { 'accept-encoding': 'gzip, br' });
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(res.headers['content-encoding']).toBe('br');
    expect(Number(res.headers['content-length'])).toBeLessThan(SCRIPT.length / 4);
    expect(brotliDecompressSync(res.body).toString()).toBe(SCRIPT);
  });

  it('keeps JSON answers for API clients, API paths and what the build does not have', async () => {
    for (const [p, headers] of [
      ['/nothing-here', { accept: 'application/json' }],
      ['/api/v1/nothing-here', SIGNED_IN],
      ['/media/00000000-0000-4000-8000-000000000000.png', SIGNED_IN],
      ['/assets/missing-000000.js', SIGNED_IN],
      ['/assets/index-abc123.js.br', SIGNED_IN],
      ['/assets/..%2Findex.html', SIGNED_IN],
    ] as const) {
      const res = await get(`${t.url}${p}`, headers);
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
    }
  });

  it('answers `/` without HTML (curl) with an index of the service, not a 404', async () => {
    for (const headers of [{ accept: '*/*' }, { accept: 'application/json' }, {}] as Record<
      string,
      string
    >[]) {
      const res = await get(`${t.url}/`, headers);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      const body = JSON.parse(res.body.toString());
      const at = (p: string) => new URL(p, t.config.publicUrl).href;
      expect(body).toMatchObject({
        service: 'media-platform',
        version: expect.stringMatching(/^\d+\.\d+\.\d+/),
        links: {
          dashboard: at('/'),
          graphql: at('/graphql'),
          openapi: at('/api/openapi.json'),
          health: at('/healthz'),
        },
      });
      // The links answer here (the test's PUBLIC_URL is not where it listens: same paths).
      for (const link of ['openapi', 'health'] as const)
        expect((await get(`${t.url}${new URL(body.links[link]).pathname}`, {})).status).toBe(200);
    }
  });

  it('leaves /graphql to GraphiQL, which subscribes over graphql-ws', async () => {
    const res = await get(`${t.url}/graphql`, SIGNED_IN);
    expect(res.status).toBe(200);
    const page = res.body.toString();
    expect(page).toContain('GraphiQL');
    expect(page).toContain('subscriptionUrl');
  });

  it('takes the credentials of connectionParams whatever their case, as GraphiQL sends its headers', async () => {
    const token = await t.tokenFor('casey');
    const key = (
      await t.http().post('/api/v1/tokens').set('authorization', `Bearer ${token}`).send({ name: 'ws' })
    ).body.token as string;
    for (const params of [{ Authorization: `Bearer ${token}` }, { 'X-Service-Key': key }]) {
      expect(await queryOverWebsocket(t.url, params, '{ me { userId } }')).toEqual({
        data: { me: { userId: 'casey' } },
      });
    }
  });
});

describe('without a web app build', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('answers / with the JSON index, which says there is no dashboard and how to build it', async () => {
    const res = await get(`${t.url}/`, SIGNED_IN);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const body = JSON.parse(res.body.toString());
    expect(body.links.dashboard).toBeNull();
    expect(body.note).toMatch(/npm run build:web/);
  });
});
