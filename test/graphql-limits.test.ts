import { startTestApp, type TestApp } from './helpers/app';

let t: TestApp;
let auth: string;
beforeAll(async () => {
  t = await startTestApp();
  auth = `Bearer ${await t.tokenFor('limits')}`;
});
afterAll(() => t.close());

/** `__type` selections nest as deep as asked (only the `__schema` field itself is exempt). */
function deepSelection(depth: number): string {
  let inner = 'name';
  for (let i = 0; i < depth; i++) inner = `ofType { ${inner} }`;
  return `__type(name: "Query") { fields { type { ${inner} } } }`;
}

describe('query limits run before any resolver', () => {
  it('accepts an ordinary query', async () => {
    const res = await t.gql('{ me { id } teams { nodes { id } } }', {}, auth);
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
  });

  it('refuses a too-deep query', async () => {
    const res = await t.gql(`{ ${deepSelection(12)} }`, {}, auth);
    expect(res.status).toBe(400);
    expect(res.body.errors[0].message).toMatch(/depth/i);
    expect(res.body.errors[0].extensions.code).toBe('BAD_REQUEST');
  });

  it('refuses a deep query hidden in a fragment named __schema', async () => {
    const query = `query { ...__schema } fragment __schema on Query { ${deepSelection(12)} }`;
    const res = await t.gql(query, {}, auth);
    expect(res.status).toBe(400);
    expect(res.body.data).toBeUndefined();
  });

  it('refuses 20 aliases', async () => {
    const aliases = Array.from({ length: 20 }, (_, i) => `a${i}: me { id }`).join(' ');
    const res = await t.gql(`{ ${aliases} }`, {}, auth);
    expect(res.status).toBe(400);
    expect(res.body.errors[0].message).toMatch(/alias/i);
  });

  it('refuses a huge document', async () => {
    const fields = Array.from({ length: 3000 }, () => 'id').join(' ');
    const res = await t.gql(`{ me { ${fields} } }`, {}, auth);
    expect(res.status).toBe(400);
    expect(res.body.errors[0].message).toMatch(/token/i);
  });

  it('refuses batched HTTP requests', async () => {
    const res = await t
      .http()
      .post('/graphql')
      .set('authorization', auth)
      .send([{ query: '{ me { id } }' }, { query: '{ me { id } }' }]);
    expect(res.status).toBe(400);
  });

  it('serves the GraphQL IDE from local assets in development', async () => {
    const page = await t.http().get('/graphql').set('accept', 'text/html');
    expect(page.status).toBe(200);
    expect(page.text).toContain('/graphql-ide/graphiql.min.js');
    expect(page.text).not.toMatch(/https?:\/\/(unpkg|cdn|esm\.sh)/);
    const js = await t.http().get('/graphql-ide/graphiql.min.js');
    expect(js.status).toBe(200);
    expect(js.headers['content-type']).toMatch(/javascript/);
  });
});

describe('production mode', () => {
  let prod: TestApp;
  beforeAll(async () => {
    prod = await startTestApp({ NODE_ENV: 'production', LOG_LEVEL: 'silent' });
  });
  afterAll(() => prod.close());

  it('turns introspection and the IDE off, and hides field suggestions', async () => {
    const token = `Bearer ${await prod.tokenFor('p')}`;
    const intro = await prod.gql('{ __schema { queryType { name } } }', {}, token);
    expect(intro.status).toBe(400);
    expect(JSON.stringify(intro.body)).toMatch(/introspection/i);
    const ide = await prod.http().get('/graphql').set('accept', 'text/html');
    expect(ide.text).not.toContain('graphiql');
    const typo = await prod.gql('{ me { usernam } }', {}, token);
    expect(typo.status).toBe(400);
    expect(JSON.stringify(typo.body)).not.toMatch(/Did you mean/);
  });
});
