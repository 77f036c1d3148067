import { startTestApp, type TestApp } from './helpers/app';
import { pngBytes, uploadFile } from './helpers/media';
import { requestsCounted } from './helpers/metrics';
import { rawRequest, type Answer } from './helpers/raw-http';

/**
 * `POST /graphql` with a JSON body takes a lane in front of Express (src/http/http.lane.ts): the
 * same stages, then the direct answer of a known document, else Apollo. A body sent chunked
 * (no Content-Length) is left to the generic stack, which serves it the same, so each request
 * below is sent both ways and must be answered the same: status, body and headers, errors
 * included.
 */

const APP_ORIGIN = 'https://app.example.com';
let t: TestApp;
let alice: string;
let bob: string;

function post(body: string, headers: Record<string, string>, chunked = false): Promise<Answer> {
  const length: Record<string, string> = chunked ? {} : { 'content-length': String(Buffer.byteLength(body)) };
  return rawRequest(
    `${t.url}/graphql`,
    { method: 'POST', headers: { 'content-type': 'application/json', ...length, ...headers } },
    body,
    chunked,
  );
}

/** The answer of the lane and of the generic stack, less what differs by the moment. */
async function bothWays(body: string | object, headers: Record<string, string> = {}) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const fixed = { 'x-request-id': 'graphql-lane-1', ...headers };
  const strip = ({ status, headers: h, body: b }: Answer) => {
    const { date: _date, 'ratelimit-remaining': _remaining, 'ratelimit-reset': _reset, ...rest } = h;
    return { status, headers: rest, body: b };
  };
  const lane = strip(await post(text, fixed));
  const generic = strip(await post(text, fixed, true));
  return { lane, generic };
}

beforeAll(async () => {
  t = await startTestApp({ CORS_ORIGINS: APP_ORIGIN });
  alice = `Bearer ${await t.tokenFor('glane-alice')}`;
  bob = `Bearer ${await t.tokenFor('glane-bob')}`;
  for (let i = 0; i < 2; i++)
    expect((await uploadFile(t, alice, pngBytes(8, 8), `a${i}.png`, 'x')).status).toBe(200);
});
afterAll(() => t.close());

const LIST = 'query L($n: Int) { media(first: $n) { nodes { id imageName tags createdAt } } }';

describe('POST /graphql: the lane and the generic stack', () => {
  it('answer a known document the same (the direct answer), and a new one (Apollo)', async () => {
    for (let i = 0; i < 3; i++) {
      const { lane, generic } = await bothWays(
        { query: LIST, variables: { n: 2 } },
        { authorization: alice },
      );
      expect(lane).toEqual(generic);
      expect(lane.status).toBe(200);
      expect(JSON.parse(lane.body).data.media.nodes).toHaveLength(2);
    }
    const fresh = await bothWays({ query: '{ me { id } fresh: me { id } }' }, { authorization: alice });
    expect(fresh.lane).toEqual(fresh.generic);
    expect(JSON.parse(fresh.lane.body).data.fresh.id).toBeDefined();
  });

  it('show each owner only its own, and a foreign id as not found, either way', async () => {
    const mine = await bothWays({ query: LIST, variables: { n: 5 } }, { authorization: alice });
    const theirs = await bothWays({ query: LIST, variables: { n: 5 } }, { authorization: bob });
    expect(mine.lane).toEqual(mine.generic);
    expect(theirs.lane).toEqual(theirs.generic);
    const ids = (a: { body: string }) =>
      (JSON.parse(a.body) as { data: { media: { nodes: { id: string }[] } } }).data.media.nodes.map(
        (n) => n.id,
      );
    expect(ids(mine.lane)).toHaveLength(2);
    expect(ids(theirs.lane)).toHaveLength(0);
    const foreign = await bothWays(
      { query: 'query A($id: ID!) { mediaAsset(id: $id) { id } }', variables: { id: ids(mine.lane)[0] } },
      { authorization: bob },
    );
    expect(foreign.lane).toEqual(foreign.generic);
    expect(JSON.parse(foreign.lane.body).errors[0].extensions.code).toBe('NOT_FOUND');
  });

  it('refuse bad credentials and bad requests the same', async () => {
    const cases: [string | object, Record<string, string>][] = [
      [{ query: LIST }, {}],
      [{ query: LIST }, { authorization: 'Bearer not-a-token' }],
      [{ query: LIST }, { 'x-service-key': '00000000-0000-4000-8000-000000000000' }],
      ['{"query": ', { authorization: alice }],
      [{ query: '{ me { id ' }, { authorization: alice }],
      [{ query: '{ me { nope } }' }, { authorization: alice }],
      [{ query: LIST, variables: { n: 'two' } }, { authorization: alice }],
      [{ query: LIST, variables: { n: 100000 } }, { authorization: alice }],
      [{ variables: {} }, { authorization: alice }],
      [{ query: `{ me { id } } # ${'x'.repeat(200_000)}` }, { authorization: alice }],
    ];
    for (const [body, headers] of cases) {
      const { lane, generic } = await bothWays(body, headers);
      expect(lane).toEqual(generic);
      expect(lane.status).toBeGreaterThanOrEqual(200);
      expect(lane.status).toBeLessThan(500);
    }
    const unauthenticated = await bothWays({ query: LIST }, { authorization: 'Bearer not-a-token' });
    expect(unauthenticated.lane.status).toBe(401);
    const malformed = await bothWays('{"query": ', { authorization: alice });
    expect(malformed.lane.status).toBe(400);
  });

  it('negotiate the type and CORS the same', async () => {
    for (const headers of [
      { accept: 'application/graphql-response+json' } as Record<string, string>,
      { accept: 'application/json;q=0.5, application/graphql-response+json' },
      { accept: 'text/html' },
      { origin: APP_ORIGIN },
      { origin: 'https://evil.example.net' },
    ]) {
      const { lane, generic } = await bothWays(
        { query: LIST, variables: { n: 1 } },
        { authorization: alice, ...headers },
      );
      expect(lane).toEqual(generic);
    }
    const cors = await bothWays({ query: LIST }, { authorization: alice, origin: APP_ORIGIN });
    expect(cors.lane.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
  });

  it('counts both in the metrics under /graphql, and a refused one under no route', async () => {
    const count = () => requestsCounted(t, 'POST', '/graphql', 200);
    const before = await count();
    await bothWays({ query: LIST, variables: { n: 1 } }, { authorization: alice });
    expect(await count()).toBe(before + 2);
    // Refused before reaching GraphQL: no route, either way.
    const refused = () => requestsCounted(t, 'POST', '(unmatched)', 401);
    const refusedBefore = await refused();
    await bothWays({ query: LIST }, { authorization: 'Bearer not-a-token' });
    expect(await refused()).toBe(refusedBefore + 2);
  });

  it('replays a mutation under the same Idempotency-Key on the lane', async () => {
    const rename = {
      query: 'mutation M($id: ID!) { updateMediaTags(id: $id, tags: ["kept"]) { id tags } }',
      variables: {
        id: (
          JSON.parse(
            (await bothWays({ query: LIST, variables: { n: 1 } }, { authorization: alice })).lane.body,
          ).data.media.nodes[0] as { id: string }
        ).id,
      },
    };
    const headers = { authorization: alice, 'idempotency-key': 'graphql-lane-key-1' };
    const first = await post(JSON.stringify(rename), headers);
    const again = await post(JSON.stringify(rename), headers);
    expect(first.status).toBe(200);
    expect(again.body).toBe(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
  });
});
