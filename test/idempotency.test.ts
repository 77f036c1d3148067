import { randomUUID } from 'node:crypto';
import { ApiKey } from '../src/auth/api-key.entity';
import { Deployment } from '../src/jobs/deployment.entity';
import { MediaAsset } from '../src/media/media.entity';
import { startTestApp, type TestApp } from './helpers/app';
import { BUILTIN } from './helpers/jobs';
import { uploadFile } from './helpers/media';

jest.setTimeout(90_000);

let t: TestApp;
let alice: string;
let bob: string;
let text: string;

beforeAll(async () => {
  t = await startTestApp();
  alice = `Bearer ${await t.tokenFor('alice')}`;
  bob = `Bearer ${await t.tokenFor('bob')}`;
  text = (await uploadFile(t, alice, Buffer.from('a b\n'), 'w.txt')).body.media.id;
});
afterAll(() => t.close());

const count = (entity: typeof Deployment | typeof ApiKey) => t.runtime.orm.em.fork().count(entity, {});
/** Uploads only: the jobs of other tests keep adding their outputs meanwhile. */
const uploads = () => t.runtime.orm.em.fork().count(MediaAsset, { type: 'source_asset' });

function deployment(auth: string, key: string | undefined, body: Record<string, unknown>) {
  const req = t.http().post('/api/v1/deployments').set('authorization', auth);
  if (key !== undefined) req.set('idempotency-key', key);
  return req.send(body);
}

describe('Idempotency-Key on POST /api/v1/deployments', () => {
  it('answers the first answer again for the same body, and creates nothing new', async () => {
    const key = randomUUID();
    const before = await count(Deployment);
    const first = await deployment(alice, key, { name: 'once', model_id: BUILTIN.wordcount, args: { text } });
    expect(first.status).toBe(201);
    // The same body with its keys in another order is the same request.
    const again = await deployment(alice, key, { args: { text }, model_id: BUILTIN.wordcount, name: 'once' });
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.headers['content-type']).toBe(first.headers['content-type']);
    expect(await count(Deployment)).toBe(before + 1);
  });

  it('is CONFLICT for a different body or Cancel-After under the same key', async () => {
    const key = randomUUID();
    await deployment(alice, key, { name: 'a', model_id: BUILTIN.wordcount, args: { text } });
    const before = await count(Deployment);
    const other = await deployment(alice, key, { name: 'b', model_id: BUILTIN.wordcount, args: { text } });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('CONFLICT');
    const deadline = await t
      .http()
      .post('/api/v1/deployments')
      .set('authorization', alice)
      .set('idempotency-key', key)
      .set('cancel-after', '5m')
      .send({ name: 'a', model_id: BUILTIN.wordcount, args: { text } });
    expect(deadline.status).toBe(409);
    expect(await count(Deployment)).toBe(before);
  });

  it('creates exactly one thing for concurrent requests with one key', async () => {
    const key = randomUUID();
    const before = await count(Deployment);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        deployment(alice, key, { name: 'race', model_id: BUILTIN.wordcount, args: { text } }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(201));
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    expect(await count(Deployment)).toBe(before + 1);
  });

  it('belongs to one principal, frees the key when nothing was made, and lasts 24 hours', async () => {
    const key = randomUUID();
    const mine = await deployment(alice, key, { name: 'x', model_id: BUILTIN.wordcount, args: { text } });
    const bobs = (await uploadFile(t, bob, Buffer.from('b\n'), 'b.txt')).body.media.id;
    const theirs = await deployment(bob, key, {
      name: 'x',
      model_id: BUILTIN.wordcount,
      args: { text: bobs },
    });
    expect(theirs.status).toBe(201);
    expect(theirs.body.id).not.toBe(mine.body.id);

    // A refused request leaves the key free for the corrected one.
    const fresh = randomUUID();
    const bad = await deployment(alice, fresh, { name: 'x', model_id: BUILTIN.wordcount, args: {} });
    expect(bad.status).toBe(400);
    const good = await deployment(alice, fresh, { name: 'x', model_id: BUILTIN.wordcount, args: { text } });
    expect(good.status).toBe(201);
    expect(good.headers['idempotent-replayed']).toBeUndefined();

    await t.runtime.orm.em
      .fork()
      .execute(`update idempotency_keys set created_at = now() - interval '25 hours'`);
    const later = await deployment(alice, key, { name: 'x', model_id: BUILTIN.wordcount, args: { text } });
    expect(later.status).toBe(201);
    expect(later.body.id).not.toBe(mine.body.id);
  });

  it('refuses a malformed key', async () => {
    const res = await deployment(alice, 'x'.repeat(256), {
      name: 'x',
      model_id: BUILTIN.wordcount,
      args: { text },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('BAD_REQUEST');
  });

  it('works on GraphQL requests too', async () => {
    const send = (key: string, args: Record<string, unknown>) =>
      t
        .http()
        .post('/graphql')
        .set('authorization', alice)
        .set('idempotency-key', key)
        .send({
          query: 'mutation ($i: CreateDeploymentInput!) { createDeployment(input: $i) { id } }',
          variables: { i: { name: 'g', modelId: BUILTIN.wordcount, args } },
        });
    const key = randomUUID();
    const first = await send(key, { text });
    const again = await send(key, { text });
    expect(again.body.data.createDeployment.id).toBe(first.body.data.createDeployment.id);
    // An answer with errors made nothing: the key stays free.
    const fresh = randomUUID();
    const failed = await send(fresh, {});
    expect(failed.body.errors[0].extensions.code).toBe('VALIDATION_FAILED');
    const fixed = await send(fresh, { text });
    expect(fixed.body.data.createDeployment.id).toBeDefined();
  });

  it('keeps a key under which something was made though the answer failed: a repeat makes it no more', async () => {
    // Two mutations in one request: the first makes a deployment, the second is refused.
    const send = () =>
      t
        .http()
        .post('/graphql')
        .set('authorization', alice)
        .set('idempotency-key', key)
        .send({
          query: `mutation ($ok: CreateDeploymentInput!, $bad: CreateDeploymentInput!) {
            a: createDeployment(input: $ok) { id } b: createDeployment(input: $bad) { id } }`,
          variables: {
            ok: { name: 'half', modelId: BUILTIN.wordcount, args: { text } },
            bad: { name: 'half', modelId: BUILTIN.wordcount, args: {} },
          },
        });
    const key = randomUUID();
    const before = await count(Deployment);
    const first = await send();
    expect(first.body.errors[0].extensions.code).toBe('VALIDATION_FAILED');
    expect(await count(Deployment)).toBe(before + 1);
    const again = await send();
    expect(again.body.errors[0].extensions.code).toBe('VALIDATION_FAILED');
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(await count(Deployment)).toBe(before + 1);
  });
});

describe('Idempotency-Key on POST /api/v1/tokens', () => {
  it('answers the same key value once more, creates one key, and stores no token in clear', async () => {
    const key = randomUUID();
    const before = await count(ApiKey);
    const send = (name: string) =>
      t.http().post('/api/v1/tokens').set('authorization', alice).set('idempotency-key', key).send({ name });
    const first = await send('ci');
    const again = await send('ci');
    expect(first.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(await count(ApiKey)).toBe(before + 1);
    expect((await send('other')).status).toBe(409);
    const rows = await t.runtime.orm.em
      .fork()
      .execute('select response from idempotency_keys where response is not null');
    for (const row of rows) expect(Buffer.from(row.response).includes(first.body.token)).toBe(false);
  });
});

describe('Idempotency-Key on POST /uploads/upload', () => {
  function upload(key: string, file: Buffer, name = 'f.txt', tags?: string) {
    const req = t.http().post('/uploads/upload').set('authorization', alice).set('idempotency-key', key);
    if (tags !== undefined) req.field('tags', tags);
    return req.attach('file', file, name);
  }

  it('compares the file, its name and tags, not the multipart framing', async () => {
    const key = randomUUID();
    const before = await uploads();
    const first = await upload(key, Buffer.from('same bytes\n'), 'f.txt', 'a,b');
    expect(first.status).toBe(200);
    const again = await upload(key, Buffer.from('same bytes\n'), 'f.txt', 'a,b');
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(await uploads()).toBe(before + 1);
    for (const [bytes, name, tags] of [
      ['other bytes\n', 'f.txt', 'a,b'],
      ['same bytes\n', 'g.txt', 'a,b'],
      ['same bytes\n', 'f.txt', 'c'],
    ]) {
      const res = await upload(key, Buffer.from(bytes), name, tags);
      expect(res.status).toBe(409);
    }
    expect(await uploads()).toBe(before + 1);
  });

  it('stores one file for concurrent uploads with one key', async () => {
    const key = randomUUID();
    const before = await uploads();
    const bytes = Buffer.alloc(3 * 1024 * 1024, 7);
    const answers = await Promise.all(Array.from({ length: 4 }, () => upload(key, bytes, 'big.bin')));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(new Set(answers.map((a) => a.body.media.id)).size).toBe(1);
    expect(await uploads()).toBe(before + 1);
  });

  it('is CONFLICT when the key was used for another kind of request', async () => {
    const key = randomUUID();
    await deployment(alice, key, { name: 'x', model_id: BUILTIN.wordcount, args: { text } });
    const res = await upload(key, Buffer.from('x'));
    expect(res.status).toBe(409);
  });
});
