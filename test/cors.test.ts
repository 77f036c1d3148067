import { startTestApp, type TestApp } from './helpers/app';

/** CORS_ORIGINS over real HTTP: preflights as browsers send them, then the requests themselves. */

const APP = 'https://app.example.com';
const EVIL = 'https://evil.example.net';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ CORS_ORIGINS: `${APP},http://localhost:5173` });
});
afterAll(() => t.close());

const preflight = (
  app: TestApp,
  path: string,
  origin: string,
  method = 'POST',
  headers = 'authorization, content-type',
) =>
  app
    .http()
    .options(path)
    .set('origin', origin)
    .set('access-control-request-method', method)
    .set('access-control-request-headers', headers);

describe('an allowed origin', () => {
  it.each([
    ['/graphql', 'POST', 'authorization, content-type, apollo-require-preflight'],
    ['/api/v1/models/00000000-0000-4000-8000-000000000000', 'PUT', 'x-service-key, content-type'],
    ['/uploads/upload', 'POST', 'authorization'],
    ['/api/v1/deployments', 'POST', 'authorization, content-type, idempotency-key, prefer, cancel-after'],
    ['/api/v1/jobs/events', 'GET', 'authorization, last-event-id'],
  ])('gets its preflight for %s answered with what it may send', async (path, method, headers) => {
    const res = await preflight(t, path, APP, method, headers);
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe(APP);
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    expect(res.headers['access-control-allow-methods']).toContain(method);
    const allowed = res.headers['access-control-allow-headers'].split(', ');
    for (const h of headers.split(', ')) expect(allowed).toContain(h);
    expect(res.headers.vary).toMatch(/Origin/);
  });

  it('reads the answers, their errors and the headers clients need', async () => {
    const auth = `Bearer ${await t.tokenFor('alice')}`;
    const ok = await t.http().get('/api/v1/teams').set('origin', APP).set('authorization', auth);
    expect(ok.status).toBe(200);
    expect(ok.headers['access-control-allow-origin']).toBe(APP);
    expect(ok.headers['access-control-expose-headers']).toMatch(/Link.*Retry-After.*RateLimit-Remaining/);
    expect(ok.headers['access-control-expose-headers']).toMatch(/Idempotent-Replayed.*Preference-Applied/);
    const gql = await t
      .http()
      .post('/graphql')
      .set('origin', 'http://localhost:5173')
      .set('authorization', auth)
      .send({ query: '{ me { userId } }' });
    expect(gql.status).toBe(200);
    expect(gql.headers['access-control-allow-origin']).toBe('http://localhost:5173');
    const refused = await t.http().get('/api/v1/teams').set('origin', APP);
    expect(refused.status).toBe(401);
    expect(refused.headers['access-control-allow-origin']).toBe(APP);
  });
});

describe('another origin', () => {
  it('gets its preflight refused with 403 and no CORS headers', async () => {
    const res = await preflight(t, '/graphql', EVIL);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
  });

  it('gets plain answers without CORS headers, so the browser keeps them from it', async () => {
    const res = await t.http().get('/healthz').set('origin', EVIL);
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('is refused by default: no origin is allowed unless configured', async () => {
    const plain = await startTestApp();
    try {
      expect((await preflight(plain, '/graphql', APP)).status).toBe(403);
    } finally {
      await plain.close();
    }
  });
});

describe('CORS_ORIGINS=*', () => {
  it('lets any origin in, never with credentials', async () => {
    const open = await startTestApp({ CORS_ORIGINS: '*' });
    try {
      const res = await preflight(open, '/graphql', EVIL);
      expect(res.status).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe('*');
      expect(res.headers['access-control-allow-credentials']).toBeUndefined();
      const bridge = await fetch(`${open.bridgeUrl}/api/v1/matrix/dendrite`, {
        method: 'OPTIONS',
        headers: {
          origin: EVIL,
          'access-control-request-method': 'GET',
          'access-control-request-headers': 'x-api-key',
        },
      });
      expect(bridge.status).toBe(204);
      expect(bridge.headers.get('access-control-allow-headers')).toContain('x-api-key');
    } finally {
      await open.close();
    }
  });
});
