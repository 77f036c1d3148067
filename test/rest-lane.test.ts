import { restRoutes } from '../rest-compat/routes';
import { startTestApp, type TestApp } from './helpers/app';
import { pngBytes, uploadFile } from './helpers/media';
import { requestsCounted } from './helpers/metrics';
import { rawRequest, type Answer } from './helpers/raw-http';

/**
 * The REST lane (src/http/http.lane.ts) answers the table's GET paths without parameters in
 * front of Express; a request the lane leaves alone takes the generic stack. A GET with an
 * empty body (`Content-Length: 0`) is such a request and changes nothing else, so each answer
 * below is asked both ways and must be the same: status, body and headers, errors included.
 */

const APP_ORIGIN = 'https://app.example.com';
let t: TestApp;
let alice: string;
let bob: string;

function get(path: string, headers: Record<string, string>, generic: boolean): Promise<Answer> {
  return rawRequest(`${t.url}${path}`, {
    method: 'GET',
    headers: generic ? { ...headers, 'content-length': '0' } : headers,
  });
}

/**
 * The answer of the lane and of the generic stack, less what differs by the moment (the date,
 * the seconds to the next rate-limit window, storage billed up to now). Each request spends one
 * of the allowance, so the second has exactly one left fewer.
 */
async function bothWays(path: string, headers: Record<string, string> = {}) {
  const fixed = { 'x-request-id': 'lane-test-1', ...headers };
  const first = await get(path, fixed, false);
  const second = await get(path, fixed, true);
  const [remaining, reset] = ['ratelimit-remaining', 'ratelimit-reset'].map((h) =>
    [first, second].map((a) => Number(a.headers[h])),
  );
  // A window that ended between the two (the owner's first request began it a minute ago) starts
  // the count again.
  const sameWindow = reset[1] <= reset[0];
  if (remaining[0] > 0 && sameWindow) expect(remaining[1]).toBe(remaining[0] - 1);
  const strip = ({ status, headers: h, body }: Answer) => {
    const {
      date: _date,
      'ratelimit-remaining': _remaining,
      'ratelimit-reset': _reset,
      'retry-after': _retry,
      'content-length': length,
      ...rest
    } = h;
    // Billing's storage counts byte-seconds up to the moment of the request (its length varies
    // with them): each answer's length is checked against its own body instead.
    expect(Number(length)).toBe(Buffer.byteLength(body));
    return { status, headers: rest, body: body.replace(/"byte_seconds":"[\d.]+"/, '"byte_seconds":"?"') };
  };
  return { lane: strip(first), generic: strip(second) };
}

beforeAll(async () => {
  t = await startTestApp({ CORS_ORIGINS: APP_ORIGIN, CDN_URL: 'http://cdn.test/root' });
  alice = `Bearer ${await t.tokenFor('lane-alice')}`;
  bob = `Bearer ${await t.tokenFor('lane-bob')}`;
  for (let i = 0; i < 3; i++)
    expect((await uploadFile(t, alice, pngBytes(8, 8), `a${i}.png`, 'x')).status).toBe(200);
  expect((await uploadFile(t, bob, pngBytes(8, 8), 'b.png')).status).toBe(200);
});
afterAll(() => t.close());

/** Every path the lane takes: the table's GET paths without parameters, less the login routes'. */
const lanePaths = restRoutes
  .filter((r) => r.method === 'get' && !r.path.includes(':') && r.path !== '/api/v1/fetch-metadata')
  .map((r) => r.path);

describe('the REST lane and the generic stack', () => {
  it('covers the list of media', () => {
    expect(lanePaths).toContain('/api/v1/media');
  });

  it.each(lanePaths)('answer %s the same, signed in', async (path) => {
    const { lane, generic } = await bothWays(path, { authorization: alice });
    expect(lane).toEqual(generic);
    expect(lane.headers['x-request-id']).toBe('lane-test-1');
  });

  it.each(lanePaths)('refuse %s the same without a credential or with a bad one', async (path) => {
    for (const headers of [
      {} as Record<string, string>,
      { authorization: 'Bearer not-a-token' },
      { authorization: 'Basic dXNlcjpwYXNz' },
      { 'x-service-key': '00000000-0000-4000-8000-000000000000' },
      { authorization: alice, 'x-service-key': '00000000-0000-4000-8000-000000000000' },
    ]) {
      const { lane, generic } = await bothWays(path, headers);
      expect(lane.status).toBeGreaterThanOrEqual(400);
      expect(lane.status).toBeLessThan(500);
      expect(lane).toEqual(generic);
    }
  });

  it('pages the same, with the same next link and errors for bad paging', async () => {
    for (const query of [
      '?limit=2',
      '?limit=1&tags=x',
      '?limit=abc',
      '?limit=1&limit=2',
      '?cursor=bad',
      '?limit=0',
    ]) {
      const { lane, generic } = await bothWays(`/api/v1/media${query}`, { authorization: alice });
      expect(lane).toEqual(generic);
    }
    const { lane } = await bothWays('/api/v1/media?limit=2', { authorization: alice });
    expect(lane.status).toBe(200);
    expect(lane.headers.link).toMatch(/^<\/api\/v1\/media\?limit=2&cursor=[\w-]+>; rel="next"$/);
    const bad = await bothWays('/api/v1/media?limit=abc', { authorization: alice });
    expect(bad.lane.status).toBe(400);
    expect(JSON.parse(bad.lane.body).error.code).toBe('VALIDATION_FAILED');
  });

  it('shows each owner only its own media, either way', async () => {
    const a = await bothWays('/api/v1/media', { authorization: alice });
    const b = await bothWays('/api/v1/media', { authorization: bob });
    expect(a.lane).toEqual(a.generic);
    expect(b.lane).toEqual(b.generic);
    const ids = (x: Answer | { body: string }) =>
      (JSON.parse(x.body) as { media: { id: string }[] }).media.map((m) => m.id);
    expect(ids(a.lane)).toHaveLength(3);
    expect(ids(b.lane)).toHaveLength(1);
    expect(ids(a.lane)).not.toContain(ids(b.lane)[0]);
  });

  it('negotiates the type and CORS the same', async () => {
    for (const headers of [
      { accept: 'application/service.rest.v1+json' } as Record<string, string>,
      { accept: 'application/json;q=0.5, application/service.rest.v1+json' },
      { accept: 'text/html' },
      { origin: APP_ORIGIN },
      { origin: 'https://evil.example.net' },
    ]) {
      const { lane, generic } = await bothWays('/api/v1/media', { authorization: alice, ...headers });
      expect(lane).toEqual(generic);
    }
    const versioned = await bothWays('/api/v1/media', {
      authorization: alice,
      accept: 'application/service.rest.v1+json',
    });
    expect(versioned.lane.headers['content-type']).toBe('application/service.rest.v1+json; charset=utf-8');
    const cors = await bothWays('/api/v1/media', { authorization: alice, origin: APP_ORIGIN });
    expect(cors.lane.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
  });

  it('counts both in the metrics under the route pattern', async () => {
    const count = () => requestsCounted(t, 'GET', '/api/v1/models', 200);
    const before = await count();
    await bothWays('/api/v1/models', { authorization: alice });
    expect(await count()).toBe(before + 2);
    // Refused before reaching the route: no route, either way.
    const refused = () => requestsCounted(t, 'GET', '(unmatched)', 401);
    const refusedBefore = await refused();
    await bothWays('/api/v1/models', { authorization: 'Bearer not-a-token' });
    expect(await refused()).toBe(refusedBefore + 2);
  });
});

describe('the REST lane under rate limits', () => {
  let limited: TestApp;
  afterAll(() => limited?.close());

  it('spends the allowance and refuses past it like the generic stack', async () => {
    limited = await startTestApp({ RATE_LIMIT_PER_MINUTE: '3' }, { issuer: t.issuer });
    const carol = `Bearer ${await limited.tokenFor('lane-carol')}`;
    const saved = t;
    t = limited;
    try {
      const first = await bothWays('/api/v1/models', { authorization: carol });
      expect(first.lane.status).toBe(200);
      expect(first.generic.status).toBe(200);
      const over = await bothWays('/api/v1/models', { authorization: carol });
      expect(over.lane.status).toBe(200);
      expect(over.generic.status).toBe(429);
      const again = await get('/api/v1/models', { authorization: carol }, false);
      expect(again.status).toBe(429);
      expect(JSON.parse(again.body)).toEqual(JSON.parse(over.generic.body));
      expect(again.headers['retry-after']).toBeDefined();
    } finally {
      t = saved;
    }
  });
});
