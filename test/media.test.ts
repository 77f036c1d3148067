import { Client } from 'pg';
import sharp from 'sharp';
import { createHash } from 'node:crypto';
import { renameSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { MediaAsset } from '../src/media/media.entity';
import { startTestApp, type TestApp } from './helpers/app';
import { planOf } from './helpers/sql';
import { multipartBody, pngBytes, rawUpload, storedMedia, until, uploadFile } from './helpers/media';

const MAX_UPLOAD = 256 * 1024;
let t: TestApp;
/** SQL statements of the running app, while a test records them. */
let recording: string[] | undefined;
let alice: string;
let bob: string;

beforeAll(async () => {
  t = await startTestApp(
    { MAX_UPLOAD_BYTES: String(MAX_UPLOAD), CDN_URL: 'http://cdn.test/root' },
    { onQuery: (sql) => recording?.push(sql) },
  );
  alice = `Bearer ${await t.tokenFor('alice')}`;
  bob = `Bearer ${await t.tokenFor('bob')}`;
});
afterAll(() => t.close());

const GO_TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d*[1-9])? \+0000 UTC$/;
const png = pngBytes(16, 16);

async function listMedia(auth: string, query = '') {
  return t.http().get(`/api/v1/media${query}`).set('authorization', auth);
}

/** The file as this process serves it, whatever CDN_URL says. */
function fileUrl(url: string) {
  return new URL(url).pathname.replace(/^\/root/, '');
}

describe('upload over REST', () => {
  it('streams the file in and answers the legacy Upload response', async () => {
    const { status, body } = await uploadFile(t, alice, png, 'holiday photo.png', 'beach, sun ,beach');
    expect(status).toBe(200);
    expect(Object.keys(body).sort()).toEqual(['base_url', 'media']);
    expect(Object.keys(body.media).sort()).toEqual(['id', 'url']);
    expect(body.base_url).toBe('http://cdn.test/root/');
    expect(body.media.url).toBe(`http://cdn.test/root/media/${body.media.id}.png`);

    const { rows, files } = await storedMedia(t);
    const row = rows.find((r) => r.id === body.media.id)!;
    expect(row).toMatchObject({
      status: 'live',
      type: 'source_asset',
      imageName: 'holiday photo.png',
      extension: 'png',
      contentType: 'image/png',
      size: png.length,
      sha256: createHash('sha256').update(png).digest('hex'),
      tags: ['beach', 'sun'],
    });
    expect(files).toContain(`${body.media.id}.png`);
  });

  it('accepts the tags field after the file and any name for the file part', async () => {
    const res = await t
      .http()
      .post('/uploads/upload')
      .set('authorization', alice)
      .attach('upload', png, 'x.png')
      .field('tags', 'late');
    expect(res.status).toBe(200);
    const item = (await listMedia(alice, '?tags=late')).body.media;
    expect(item.map((m: { id: string }) => m.id)).toEqual([res.body.media.id]);
  });

  it('names the stored file from the content, never from the client', async () => {
    const cases: [string, Buffer, string, string][] = [
      ['../../etc/passwd', Buffer.from('root:x:0:0:root:/root:/bin/bash\n'), 'passwd', 'bin'],
      ['a.jpg.php', Buffer.from('<?php system($_GET["c"]); ?>'), 'a.jpg.php', 'bin'],
      ['..\\..\\windows\\evil.png', png, 'evil.png', 'png'],
      ['notes.txt', Buffer.from('plain words, ünïcode too\n'), 'notes.txt', 'txt'],
      ['fake.txt', Buffer.from([0, 1, 2, 3, 0xff, 0xfe]), 'fake.txt', 'bin'],
      ['photo.txt', png, 'photo.txt', 'png'],
      [`${'n'.repeat(1000)}.png`, png, `${'n'.repeat(251)}.png`, 'png'],
    ];
    for (const [name, content, kept, ext] of cases) {
      const { status, body } = await uploadFile(t, alice, content, name);
      expect(status).toBe(200);
      expect(body.media.url).toMatch(new RegExp(`/media/${body.media.id}\\.${ext}$`));
      const row = (await storedMedia(t)).rows.find((r) => r.id === body.media.id)!;
      expect(row.imageName).toBe(kept);
    }
    const { files } = await storedMedia(t);
    for (const f of files) expect(f).toMatch(/^[0-9a-f-]{36}\.[a-z0-9]+$/);
  });

  it('refuses requests it cannot take, leaving nothing behind', async () => {
    const before = await storedMedia(t);
    const noAuth = await t.http().post('/uploads/upload').attach('file', png, 'a.png');
    expect(noAuth.status).toBe(401);
    expect(noAuth.body.error.code).toBe('UNAUTHENTICATED');

    const json = await t.http().post('/uploads/upload').set('authorization', alice).send({ file: 'x' });
    expect(json.status).toBe(415);

    const twoFiles = await t
      .http()
      .post('/uploads/upload')
      .set('authorization', alice)
      .attach('a', png, 'a.png')
      .attach('b', png, 'b.png');
    expect(twoFiles.status).toBe(400);
    expect(twoFiles.body.error.message).toMatch(/one file/);

    const noFile = await t.http().post('/uploads/upload').set('authorization', alice).field('tags', 'x');
    expect(noFile.status).toBe(400);
    expect(noFile.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { file: expect.any(String) },
    });

    const badTags = await uploadFile(t, alice, png, 'a.png', 'x'.repeat(65));
    expect(badTags.status).toBe(400);
    expect(badTags.body).toMatchObject({ error: { code: 'VALIDATION_FAILED' } });

    const after = await storedMedia(t);
    expect(after.rows.length).toBe(before.rows.length);
    expect(after.files.sort()).toEqual(before.files.sort());
  });
});

describe('size limit', () => {
  it('answers 413 from the declared length without reading the body', async () => {
    const before = await storedMedia(t);
    const res = await t
      .http()
      .post('/uploads/upload')
      .set('authorization', alice)
      .set('content-type', 'multipart/form-data; boundary=x')
      .set('content-length', String(MAX_UPLOAD + 2 * 1024 * 1024))
      .send(Buffer.alloc(10))
      .catch((err: { response?: { status: number } }) => err.response);
    expect(res?.status).toBe(413);
    expect((await storedMedia(t)).rows.length).toBe(before.rows.length);
  });

  it('stops a streamed body at the limit with 413 and keeps nothing', async () => {
    const before = await storedMedia(t);
    const boundary = 'bound413';
    const { head, tail } = multipartBody(boundary, Buffer.alloc(0), 'big.bin');
    const req = rawUpload(t, alice, boundary);
    const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
      req.on('response', (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      req.on('error', reject);
    });
    req.write(head);
    // Twice the limit, in chunks, without a Content-Length: only counting can catch it.
    for (let i = 0; i < 8; i++) req.write(Buffer.alloc(MAX_UPLOAD / 4, i));
    req.end(tail);
    const res = await response;
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body).error.code).toBe('PAYLOAD_TOO_LARGE');
    const after = await until(
      () => storedMedia(t),
      (s) => s.rows.length === before.rows.length,
    );
    expect(after.rows.length).toBe(before.rows.length);
    expect(after.files.sort()).toEqual(before.files.sort());
  });

  it('takes a file of exactly the limit', async () => {
    const exact = Buffer.concat([png, Buffer.alloc(MAX_UPLOAD - png.length, 1)]);
    const { status, body } = await uploadFile(t, alice, exact, 'exact.png');
    expect(status).toBe(200);
    const row = (await storedMedia(t)).rows.find((r) => r.id === body.media.id)!;
    expect(row.size).toBe(MAX_UPLOAD);
  });
});

describe('an interrupted upload', () => {
  it('leaves no row and no partial file', async () => {
    const before = await storedMedia(t);
    const boundary = 'boundAbort';
    const { head } = multipartBody(boundary, Buffer.alloc(0), 'cut.png');
    const req = rawUpload(t, alice, boundary);
    req.on('error', () => undefined);
    req.write(head);
    req.write(png);
    req.write(Buffer.alloc(64 * 1024, 3));
    // Wait until the service has started storing it, then drop the connection mid-file.
    const during = await until(
      () => storedMedia(t),
      (s) => s.rows.some((r) => r.status === 'uploading'),
    );
    expect(during.rows.some((r) => r.status === 'uploading')).toBe(true);
    req.destroy();
    const after = await until(
      () => storedMedia(t),
      (s) => s.rows.length === before.rows.length && s.files.length === before.files.length,
    );
    expect(after.rows.map((r) => r.id).sort()).toEqual(before.rows.map((r) => r.id).sort());
    expect(after.files.sort()).toEqual(before.files.sort());
  });
  it('leaves no row and no file when the connection drops once bytes are on disk', async () => {
    const before = await storedMedia(t);
    const boundary = 'boundAbortDisk';
    const { head } = multipartBody(boundary, Buffer.alloc(0), 'cut.png');
    const req = rawUpload(t, alice, boundary);
    req.on('error', () => undefined);
    req.write(head);
    req.write(png);
    req.write(Buffer.alloc(128 * 1024, 5));
    // The file exists with bytes in it: the write to disk has begun.
    const during = await until(
      async () => {
        const s = await storedMedia(t);
        const row = s.rows.find((r) => r.status === 'uploading');
        const size = row
          ? await stat(path.join(t.config.dataDir, 'media', `${row.id}.${row.extension}`)).then(
              (f) => f.size,
              () => 0,
            )
          : 0;
        return { ...s, size };
      },
      (s) => s.size > 0,
    );
    expect(during.size).toBeGreaterThan(0);
    req.destroy();
    const after = await until(
      () => storedMedia(t),
      (s) => s.rows.length === before.rows.length && s.files.length === before.files.length,
    );
    expect(after.rows.map((r) => r.id).sort()).toEqual(before.rows.map((r) => r.id).sort());
    expect(after.files.sort()).toEqual(before.files.sort());
  });
});

describe('upload over GraphQL (multipart request)', () => {
  const UPLOAD =
    'mutation ($file: Upload!, $tags: [String!]) { uploadMedia(file: $file, tags: $tags) { id url mediaKey imageName contentType size sha256 tags type status } }';

  function gqlUpload(auth: string | undefined, file: Buffer, name: string, preflight = true) {
    const req = t.http().post('/graphql');
    if (auth) req.set('authorization', auth);
    if (preflight) req.set('apollo-require-preflight', 'true');
    return req
      .field(
        'operations',
        JSON.stringify({ query: UPLOAD, variables: { file: null, tags: ['gql', ' gql '] } }),
      )
      .field('map', JSON.stringify({ 0: ['variables.file'] }))
      .attach('0', file, name);
  }

  it('uploads through uploadMedia', async () => {
    const res = await gqlUpload(alice, png, 'g.png');
    expect(res.status).toBe(200);
    const m = res.body.data.uploadMedia;
    expect(m).toMatchObject({
      imageName: 'g.png',
      contentType: 'image/png',
      size: png.length,
      sha256: createHash('sha256').update(png).digest('hex'),
      tags: ['gql'],
      type: 'SOURCE_ASSET',
      status: 'LIVE',
      mediaKey: `media/${m.id}.png`,
      url: `http://cdn.test/root/media/${m.id}.png`,
    });
    const served = await t.http().get(fileUrl(m.url));
    expect(served.status).toBe(200);
    expect(Buffer.compare(served.body as Buffer, png)).toBe(0);
  });

  it('needs the CSRF preflight header and a credential, storing nothing otherwise', async () => {
    const before = await storedMedia(t);
    const noPreflight = await gqlUpload(alice, png, 'g.png', false);
    expect(noPreflight.status).toBe(400);
    expect(JSON.stringify(noPreflight.body)).toMatch(/CSRF/);
    const anonymous = await gqlUpload(undefined, png, 'g.png');
    expect(anonymous.status).toBe(401);
    const after = await storedMedia(t);
    expect(after.rows.length).toBe(before.rows.length);
    expect(after.files.length).toBe(before.files.length);
  });

  it('answers 413 for a file over the limit, keeping nothing', async () => {
    const before = await storedMedia(t);
    const res = await gqlUpload(alice, Buffer.alloc(MAX_UPLOAD + 10, 1), 'big.bin');
    expect(JSON.stringify(res.body)).toMatch(/PAYLOAD_TOO_LARGE/);
    const after = await until(
      () => storedMedia(t),
      (s) => s.rows.length === before.rows.length,
    );
    expect(after.rows.length).toBe(before.rows.length);
    expect(after.files.length).toBe(before.files.length);
  });
});

describe('listing, tags, update and delete', () => {
  let owner: string;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    owner = `Bearer ${await t.tokenFor('lister')}`;
    for (const [name, tags] of [
      ['cat', 'animal,cute'],
      ['dog', 'animal'],
      ['car', 'vehicle,cute'],
      ['none', ''],
    ] as const) {
      ids[name] = (await uploadFile(t, owner, png, `${name}.png`, tags)).body.media.id;
    }
  });

  const idsOf = (res: { body: { media: { id: string }[] } }) => res.body.media.map((m) => m.id).sort();

  it('answers the legacy list object with full-URL items in Go time', async () => {
    const res = await listMedia(owner);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['media', 'media_key']);
    expect(res.body.media_key).toBe('http://cdn.test/root/');
    expect(res.body.media).toHaveLength(4);
    const cat = res.body.media.find((m: { id: string }) => m.id === ids.cat);
    expect(Object.keys(cat).sort()).toEqual([
      'id',
      'image_name',
      'media_key',
      'status',
      'tags',
      'type',
      'upload_date',
    ]);
    expect(cat).toMatchObject({
      image_name: 'cat.png',
      media_key: `http://cdn.test/root/media/${ids.cat}.png`,
      status: 'live',
      tags: ['animal', 'cute'],
      type: 'source_asset',
    });
    expect(cat.upload_date).toMatch(GO_TIME);
    // Newest first.
    expect(res.body.media.map((m: { image_name: string }) => m.image_name)).toEqual([
      'none.png',
      'car.png',
      'dog.png',
      'cat.png',
    ]);
  });

  it('filters by tags, excluded tags and both', async () => {
    expect(idsOf(await listMedia(owner, '?tags=animal'))).toEqual([ids.cat, ids.dog].sort());
    expect(idsOf(await listMedia(owner, '?tags=cute,vehicle'))).toEqual([ids.cat, ids.car].sort());
    expect(idsOf(await listMedia(owner, '?excludeTags=cute'))).toEqual([ids.dog, ids.none].sort());
    expect(idsOf(await listMedia(owner, '?tags=animal&excludeTags=cute'))).toEqual([ids.dog]);
    expect(idsOf(await listMedia(owner, '?tags=nothing'))).toEqual([]);
  });

  it('filters on tags holding commas, quotes, braces and backslashes as plain data', async () => {
    const odd = ['a,b', 'say "hi"', '{x}', 'back\\slash'];
    const id = (await uploadFile(t, owner, png, 'odd.png')).body.media.id;
    await t.gql(
      'mutation ($id: ID!, $tags: [String!]!) { updateMediaTags(id: $id, tags: $tags) { id } }',
      { id, tags: odd },
      owner,
    );
    for (const tag of odd) {
      const res = await t.gql(
        'query ($t: [String!]) { media(filter: { tags: $t }) { nodes { id tags } } }',
        { t: [tag] },
        owner,
      );
      expect(res.body.data.media.nodes).toEqual([{ id, tags: odd }]);
    }
    const excluded = await t.gql(
      'query { media(filter: { excludeTags: ["a,b"] }) { nodes { id } } }',
      {},
      owner,
    );
    expect(excluded.body.data.media.nodes.map((n: { id: string }) => n.id)).not.toContain(id);
    await t.http().delete(`/api/v1/media/${id}`).set('authorization', owner);
  });

  it('carries the same data as the GraphQL query (contract)', async () => {
    const rest = await listMedia(owner, '?tags=animal');
    const gql = await t.gql(
      '{ mediaBaseUrl media(filter: {tags: ["animal"]}) { nodes { id imageName url status type tags createdAt } } }',
      {},
      owner,
    );
    const { nodes } = gql.body.data.media;
    expect(rest.body.media_key).toBe(gql.body.data.mediaBaseUrl);
    expect(
      rest.body.media.map((m: { id: string; media_key: string; tags: string[] }) => [
        m.id,
        m.media_key,
        m.tags,
      ]),
    ).toEqual(nodes.map((n: { id: string; url: string; tags: string[] }) => [n.id, n.url, n.tags]));
  });

  it('reads only the columns the asked fields need, and answers them as the single asset does', async () => {
    const all =
      'id imageName url mediaKey status type tags contentType size sha256 jobId createdAt updatedAt';
    for (const fields of [all, 'url', 'tags createdAt', '__typename sha256 size updatedAt jobId']) {
      const list = await t.gql(
        `{ media(filter: {tags: ["animal"]}) { nodes { id ${fields} } edges { cursor node { id } } } }`,
        {},
        owner,
      );
      const { nodes, edges } = list.body.data.media;
      expect(nodes.length).toBeGreaterThan(0);
      expect(edges.map((e: { node: { id: string } }) => e.node.id)).toEqual(
        nodes.map((n: { id: string }) => n.id),
      );
      for (const node of nodes) {
        const one = await t.gql(
          `query ($id: ID!) { mediaAsset(id: $id) { id ${fields} } }`,
          { id: node.id },
          owner,
        );
        expect(node).toEqual(one.body.data.mediaAsset);
      }
    }
    recording = [];
    await t.gql('{ media { nodes { url } } }', {}, owner);
    const [page] = recording.filter((s) => /from "?media_assets"?/.test(s));
    recording = undefined;
    expect(page).toMatch(/\bextension\b/);
    expect(page).not.toMatch(/sha256|content_type|updated_at|\bsize\b/);
  });

  it('pages with limit and cursor through a Link header', async () => {
    const first = await listMedia(owner, '?limit=3');
    expect(first.body.media).toHaveLength(3);
    const link = /^<([^>]+)>; rel="next"$/.exec(first.headers.link)![1];
    expect(link).toMatch(/^\/api\/v1\/media\?limit=3&cursor=/);
    const second = await t.http().get(link).set('authorization', owner);
    expect(second.body.media).toHaveLength(1);
    expect(second.headers.link).toBeUndefined();
    const all = [...first.body.media, ...second.body.media].map((m: { id: string }) => m.id).sort();
    expect(all).toEqual(Object.values(ids).sort());
  });

  it('replaces tags and answers the legacy update object', async () => {
    const res = await t
      .http()
      .put(`/api/v1/media/${ids.dog}`)
      .set('authorization', owner)
      .send({ tags: [' pet ', 'pet', 'good'] });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      media: {
        id: ids.dog,
        media_key: `media/${ids.dog}.png`,
        status: 'live',
        tags: ['pet', 'good'],
        title: 'dog.png',
      },
      media_key: 'http://cdn.test/root/',
    });
    expect(idsOf(await listMedia(owner, '?tags=pet'))).toEqual([ids.dog]);
    const bad = await t
      .http()
      .put(`/api/v1/media/${ids.dog}`)
      .set('authorization', owner)
      .send({ tags: 'pet' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_FAILED');
  });

  it('deletes the row and the file; a second delete is 404', async () => {
    const url = (await listMedia(owner)).body.media.find((m: { id: string }) => m.id === ids.car).media_key;
    expect((await t.http().get(fileUrl(url))).status).toBe(200);
    const del = await t.http().delete(`/api/v1/media/${ids.car}`).set('authorization', owner);
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expect((await t.http().get(fileUrl(url))).status).toBe(404);
    const { rows, files } = await storedMedia(t);
    expect(rows.find((r) => r.id === ids.car)).toBeUndefined();
    expect(files).not.toContain(`${ids.car}.png`);
    const again = await t.http().delete(`/api/v1/media/${ids.car}`).set('authorization', owner);
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('NOT_FOUND');
  });
});

describe('serving files', () => {
  let url: string;
  const content = Buffer.concat([png, Buffer.from('0123456789')]);

  beforeAll(async () => {
    url = fileUrl((await uploadFile(t, alice, content, 'served.png')).body.media.url);
  });

  it('serves the whole file with type, length, ETag and immutable caching', async () => {
    const res = await t.http().get(url);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('image/png');
    expect(res.headers['content-length']).toBe(String(content.length));
    expect(res.headers.etag).toBe(`"${createHash('sha256').update(content).digest('hex')}"`);
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(res.headers['accept-ranges']).toBe('bytes');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(Buffer.compare(res.body as Buffer, content)).toBe(0);
  });

  it('answers ranges, suffix ranges and unsatisfiable ranges', async () => {
    const mid = await t.http().get(url).set('range', 'bytes=2-5');
    expect(mid.status).toBe(206);
    expect(mid.headers['content-range']).toBe(`bytes 2-5/${content.length}`);
    expect(mid.headers['content-length']).toBe('4');
    expect(Buffer.compare(mid.body as Buffer, content.subarray(2, 6))).toBe(0);

    const open = await t
      .http()
      .get(url)
      .set('range', `bytes=${content.length - 3}-`);
    expect(Buffer.compare(open.body as Buffer, content.subarray(-3))).toBe(0);

    const suffix = await t.http().get(url).set('range', 'bytes=-10');
    expect(suffix.status).toBe(206);
    expect((suffix.body as Buffer).toString()).toBe('0123456789');

    const beyond = await t.http().get(url).set('range', `bytes=${content.length}-`);
    expect(beyond.status).toBe(416);
    expect(beyond.headers['content-range']).toBe(`bytes */${content.length}`);

    const stale = await t.http().get(url).set('range', 'bytes=0-1').set('if-range', '"other"');
    expect(stale.status).toBe(200);
  });

  it('answers conditional and HEAD requests', async () => {
    const etag = (await t.http().head(url)).headers.etag;
    const cached = await t.http().get(url).set('if-none-match', etag);
    expect(cached.status).toBe(304);
    const head = await t.http().head(url);
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe(String(content.length));
  });

  it('serves a small WebP preview of an image at a fixed width (?w=), made from the original', async () => {
    const big = await sharp({ create: { width: 1200, height: 600, channels: 3, background: '#2a6' } })
      .png()
      .toBuffer();
    const bigUrl = fileUrl((await uploadFile(t, alice, big, 'wide.png')).body.media.url);
    const res = await t.http().get(`${bigUrl}?w=256`).buffer(true);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('image/webp');
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    const meta = await sharp(res.body as Buffer).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['webp', 256, 128]);
    expect((res.body as Buffer).length).toBeLessThan(big.length);
    expect((await t.http().get(`${bigUrl}?w=256`).set('if-none-match', res.headers.etag)).status).toBe(304);
    // Never enlarged: the 16-pixel image stays 16 pixels wide.
    const small = await t.http().get(`${url}?w=128`).buffer(true);
    expect((await sharp(small.body as Buffer).metadata()).width).toBe(16);
    // Only the listed widths; the error names the parameter.
    const odd = await t.http().get(`${bigUrl}?w=10000`);
    expect(odd.status).toBe(400);
    expect(odd.body.error.code).toBe('VALIDATION_FAILED');
    expect(odd.body.error.details).toEqual({ w: 'must be one of 128, 256, 512' });
  });

  it("answers a preview's If-None-Match with 304 before reading the original or resizing it", async () => {
    const image = await sharp({ create: { width: 300, height: 300, channels: 3, background: '#a26' } })
      .png()
      .toBuffer();
    const imageUrl = fileUrl((await uploadFile(t, alice, image, 'square.png')).body.media.url);
    const first = await t.http().get(`${imageUrl}?w=128`).buffer(true);
    expect(first.status).toBe(200);
    // With the original out of the store, only an answer that reads nothing can still be 304.
    const stored = path.join(t.config.dataDir, 'media', imageUrl.split('/').pop()!);
    renameSync(stored, `${stored}.away`);
    try {
      const cached = await t.http().get(`${imageUrl}?w=128`).set('if-none-match', first.headers.etag);
      expect(cached.status).toBe(304);
      expect(cached.headers.etag).toBe(first.headers.etag);
      expect(cached.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      // Another width's tag is no match: that preview would be made, and the original is gone.
      const other = await t.http().get(`${imageUrl}?w=256`).set('if-none-match', first.headers.etag);
      expect(other.status).toBe(404);
    } finally {
      renameSync(`${stored}.away`, stored);
    }
  });

  it('serves a file that is no image as it is, whatever ?w= says', async () => {
    const text = Buffer.from('plain words\n');
    const textUrl = fileUrl((await uploadFile(t, alice, text, 'words.txt')).body.media.url);
    const res = await t.http().get(`${textUrl}?w=256`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.text).toBe(text.toString());
  });

  it('answers 404 for unknown files and wrong extensions', async () => {
    const id = /media\/([0-9a-f-]+)\./.exec(url)![1];
    expect((await t.http().get(`/media/${id}.jpg`)).status).toBe(404);
    expect((await t.http().get('/media/00000000-0000-4000-8000-000000000000.png')).status).toBe(404);
    expect((await t.http().get('/media/..%2F..%2Fetc%2Fpasswd')).status).toBe(404);
  });
});

describe('the sweeper', () => {
  it('finishes abandoned uploads and interrupted deletes, and leaves live media alone', async () => {
    const live = (await uploadFile(t, alice, png, 'keep.png')).body.media.id;
    const uploading = (await uploadFile(t, alice, png, 'stuck-upload.png')).body.media.id;
    const deleting = (await uploadFile(t, alice, png, 'stuck-delete.png')).body.media.id;
    const recent = (await uploadFile(t, alice, png, 'in-flight.png')).body.media.id;
    const em = t.runtime.orm.em.fork();
    const longAgo = new Date(Date.now() - 48 * 3600_000);
    // As a crash would leave them: the rows and their files still there.
    await em.nativeUpdate(MediaAsset, { id: uploading }, { status: 'uploading', updatedAt: longAgo });
    await em.nativeUpdate(MediaAsset, { id: deleting }, { status: 'deleting', updatedAt: longAgo });
    await em.nativeUpdate(MediaAsset, { id: recent }, { status: 'uploading' });

    expect(await t.runtime.services.media.sweep()).toBe(2);
    const { rows, files } = await storedMedia(t);
    const ids = rows.map((r) => r.id);
    expect(ids).toEqual(expect.arrayContaining([live, recent]));
    expect(ids).not.toContain(uploading);
    expect(ids).not.toContain(deleting);
    expect(files).toContain(`${live}.png`);
    expect(files).not.toContain(`${uploading}.png`);
    expect(files).not.toContain(`${deleting}.png`);
  });
});

describe('tenancy', () => {
  it("answers 404 for another owner's media and never lists it", async () => {
    const { body } = await uploadFile(t, alice, png, 'private.png', 'secret');
    const id = body.media.id;
    expect(
      (
        await t
          .http()
          .put(`/api/v1/media/${id}`)
          .set('authorization', bob)
          .send({ tags: ['x'] })
      ).status,
    ).toBe(404);
    expect((await t.http().delete(`/api/v1/media/${id}`).set('authorization', bob)).status).toBe(404);
    const get = await t.gql('query ($id: ID!) { mediaAsset(id: $id) { id } }', { id }, bob);
    expect(get.body.errors[0].extensions.code).toBe('NOT_FOUND');
    const bobs = await listMedia(bob, '?tags=secret');
    expect(bobs.body.media).toEqual([]);
    // Still there for its owner.
    expect(
      (await t.gql('query ($id: ID!) { mediaAsset(id: $id) { tags } }', { id }, alice)).body.data.mediaAsset
        .tags,
    ).toEqual(['secret']);
  });

  it("keeps a team token's uploads apart from its creator's", async () => {
    const team = await t.http().post('/api/v1/teams').set('authorization', alice).send({ name: 'Studio' });
    const key = await t
      .http()
      .post('/api/v1/tokens')
      .set('authorization', alice)
      .send({ name: 'ci', team_id: team.body.id });
    const teamAuth = `Bearer ${key.body.token}`;
    const teamUpload = (await uploadFile(t, teamAuth, png, 'team.png', 'team-only')).body.media.id;
    const userUpload = (await uploadFile(t, alice, png, 'mine.png', 'team-only')).body.media.id;

    const teamList = await listMedia(teamAuth, '?tags=team-only');
    expect(teamList.body.media.map((m: { id: string }) => m.id)).toEqual([teamUpload]);
    const userList = await listMedia(alice, '?tags=team-only');
    expect(userList.body.media.map((m: { id: string }) => m.id)).toEqual([userUpload]);
    expect((await t.http().delete(`/api/v1/media/${teamUpload}`).set('authorization', alice)).status).toBe(
      404,
    );
    expect((await t.http().delete(`/api/v1/media/${userUpload}`).set('authorization', teamAuth)).status).toBe(
      404,
    );
    expect((await t.http().delete(`/api/v1/media/${teamUpload}`).set('authorization', teamAuth)).status).toBe(
      204,
    );
  });

  it('answers 404 for malformed ids without touching anything', async () => {
    expect((await t.http().delete('/api/v1/media/not-a-uuid').set('authorization', alice)).status).toBe(404);
  });
});

describe('at 100k assets', () => {
  it('lists a tag-filtered page with one indexed query, never a table scan', async () => {
    const owner = `Bearer ${await t.tokenFor('hoarder')}`;
    await listMedia(owner); // creates the user
    const em = t.runtime.orm.em.fork();
    const [{ id: userId }] = await em
      .getConnection()
      .execute(`select id from users where subject = 'hoarder'`);
    // 100k assets over 50 owners, 20 tags; the hoarder owns 2,000 of them. Written on a connection
    // of the test's own: the service's are bounded by DATABASE_QUERY_TIMEOUT_MS, a bulk load is not.
    const pg = new Client({ connectionString: t.databaseUrl });
    await pg.connect();
    await pg.query(
      `insert into media_assets (id, owner_type, owner_id, status, image_name, extension, content_type, size, sha256, tags, created_at, updated_at)
       select gen_random_uuid(), 'user', case when i % 50 = 0 then '${userId}'::uuid else md5((i % 50)::text)::uuid end,
              'live', 'f.png', 'png', 'image/png', 1, repeat('0', 64), array['tag' || (i % 20)], now() - i * interval '1 second', now()
       from generate_series(1, 100000) i`,
    );
    await pg.query('analyze media_assets');
    await pg.end();

    recording = [];
    const res = await listMedia(owner, '?tags=tag0,tag10&excludeTags=tag0&limit=20');
    const statements = recording;
    recording = undefined;
    expect(res.status).toBe(200);
    expect(res.body.media).toHaveLength(20);
    for (const m of res.body.media) expect(m.tags).toEqual(['tag10']);

    const pages = statements.filter((s) => /from "?media_assets"?/.test(s));
    expect(pages).toHaveLength(1);
    const plan = await planOf(t.databaseUrl, pages[0]);
    expect(plan).not.toMatch(/Seq Scan on media_assets/);
    expect(plan).toMatch(/Index|Bitmap/);
  }, 120_000); // inserting 100k rows took over 30 s with the whole suite on a loaded machine
});
