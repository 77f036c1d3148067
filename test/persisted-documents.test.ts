import { createHash } from 'node:crypto';
import { startTestApp, type TestApp } from './helpers/app';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

let a: TestApp;
let b: TestApp;
let alice: string;

beforeAll(async () => {
  a = await startTestApp({ ROLES: 'api' });
  // A second process of the service on the same database.
  b = await startTestApp({ ROLES: 'api' }, { databaseUrl: a.databaseUrl, issuer: a.issuer });
  alice = `Bearer ${await a.tokenFor('alice')}`;
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

const post = (t: TestApp, body: object) =>
  t.http().post('/graphql').set('authorization', alice).set('content-type', 'application/json').send(body);

describe('persisted documents (automatic persisted queries)', () => {
  const query = '{ me { id username } }';
  const hash = sha256(query);
  const persisted = { persistedQuery: { version: 1, sha256Hash: hash } };

  it('asks for an unknown document, then answers its hash alone in every process', async () => {
    const unknown = await post(b, { extensions: persisted });
    expect(unknown.status).toBe(200);
    expect(unknown.body.errors[0]).toMatchObject({
      message: 'PersistedQueryNotFound',
      extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' },
    });

    const registered = await post(a, { query, extensions: persisted });
    expect(registered.body.errors).toBeUndefined();
    const me = registered.body.data.me;
    expect(me.username).toBe('alice');

    // The other process has never seen it: it comes from the shared database.
    const byHash = await post(b, { extensions: persisted });
    expect(byHash.body).toEqual({ data: { me } });

    // As a browser sends it: a GET with the hash in the URL (cacheable), no document.
    const get = await b
      .http()
      .get('/graphql')
      .query({ extensions: JSON.stringify(persisted) })
      .set('authorization', alice)
      .set('apollo-require-preflight', 'true');
    expect(get.status).toBe(200);
    expect(get.body).toEqual({ data: { me } });
  });

  it('refuses a document that does not match its hash, and keeps nothing of it', async () => {
    const other = '{ me { id } }';
    const res = await post(a, { query: other, extensions: persisted });
    expect(res.status).toBe(400);
    const wrong = { persistedQuery: { version: 1, sha256Hash: sha256('{ nothing }') } };
    expect((await post(a, { query: other, extensions: wrong })).status).toBe(400);
    const stillUnknown = await post(b, { extensions: wrong });
    expect(stillUnknown.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
  });

  it('does not register an invalid document', async () => {
    const invalid = '{ me { noSuchField } }';
    const extensions = { persistedQuery: { version: 1, sha256Hash: sha256(invalid) } };
    const res = await post(a, { query: invalid, extensions });
    expect(res.status).toBe(400);
    const byHash = await post(b, { extensions });
    expect(byHash.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
  });
});
