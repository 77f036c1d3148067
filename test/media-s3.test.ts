import { HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';
import { MediaAsset } from '../src/media/media.entity';
import { startTestApp, type TestApp } from './helpers/app';
import { multipartBody, pngBytes, rawUpload, until, uploadFile } from './helpers/media';

/** The S3 adapter against a real S3-compatible server (s3rver) on a port of the test's own. */
const BUCKET = 'media-test';
const MAX_UPLOAD = 16 * 1024 * 1024;
let s3: S3rver;
let dir: string;
let endpoint: string;
let client: S3Client;
let t: TestApp;
let auth: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 's3rver-'));
  s3 = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory: dir,
    configureBuckets: [{ name: BUCKET, configs: [] }],
  });
  const { port } = await s3.run();
  endpoint = `http://127.0.0.1:${port}`;
  // The service takes S3 credentials from the AWS default chain, as in production.
  process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
  client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true });
  t = await startTestApp({
    STORAGE: 's3',
    S3_BUCKET: BUCKET,
    S3_ENDPOINT: endpoint,
    S3_REGION: 'us-east-1',
    CDN_URL: `${endpoint}/${BUCKET}`,
    MAX_UPLOAD_BYTES: String(MAX_UPLOAD),
  });
  auth = `Bearer ${await t.tokenFor('s3user')}`;
});

afterAll(async () => {
  await t.close();
  client.destroy();
  await s3.close();
  await rm(dir, { recursive: true, force: true });
});

async function objectKeys(): Promise<string[]> {
  const res = await client.send(new ListObjectsV2Command({ Bucket: BUCKET }));
  return (res.Contents ?? []).map((o) => o.Key!).sort();
}

async function rowCount(): Promise<number> {
  return t.runtime.orm.em.fork().count(MediaAsset, {});
}

describe('S3 storage', () => {
  // Big enough for a multipart upload in several parts.
  const big = Buffer.concat([pngBytes(4, 4), Buffer.alloc(12 * 1024 * 1024, 9)]);
  let id: string;
  let url: string;

  it('streams an upload into the bucket under media/<id>.<ext>, reachable at CDN_URL', async () => {
    const { status, body } = await uploadFile(t, auth, big, 'big.png');
    expect(status).toBe(200);
    ({ id, url } = body.media);
    expect(url).toBe(`${endpoint}/${BUCKET}/media/${id}.png`);
    expect(body.base_url).toBe(`${endpoint}/${BUCKET}/`);
    expect(await objectKeys()).toEqual([`media/${id}.png`]);
    const head = await client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: `media/${id}.png` }));
    expect(head.ContentType).toBe('image/png');
    // Straight from the bucket, as a CDN in front of it would fetch it.
    const direct = Buffer.from(await (await fetch(url)).arrayBuffer());
    expect(createHash('sha256').update(direct).digest('hex')).toBe(
      createHash('sha256').update(big).digest('hex'),
    );
  });

  it('serves ranges of the object through the service too', async () => {
    const res = await t.http().get(`/media/${id}.png`).set('range', 'bytes=100-199');
    expect(res.status).toBe(206);
    expect(Buffer.compare(res.body as Buffer, big.subarray(100, 200))).toBe(0);
  });

  it('leaves no object behind for an upload over the limit', async () => {
    const before = await rowCount();
    const boundary = 's3limit';
    const { head, tail } = multipartBody(boundary, Buffer.alloc(0), 'huge.bin');
    const req = rawUpload(t, auth, boundary);
    const status = new Promise<number>((resolve, reject) => {
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
    });
    req.write(head);
    for (let i = 0; i < 20; i++) req.write(Buffer.alloc(1024 * 1024, i));
    req.end(tail);
    expect(await status).toBe(413);
    expect(await until(rowCount, (n) => n === before)).toBe(before);
    expect(await objectKeys()).toEqual([`media/${id}.png`]);
  });

  it('leaves no object behind for an interrupted upload', async () => {
    const before = await rowCount();
    const boundary = 's3abort';
    const { head } = multipartBody(boundary, Buffer.alloc(0), 'cut.png');
    const req = rawUpload(t, auth, boundary);
    req.on('error', () => undefined);
    req.write(head);
    req.write(pngBytes(4, 4));
    req.write(Buffer.alloc(9 * 1024 * 1024, 1));
    await until(rowCount, (n) => n === before + 1);
    req.destroy();
    expect(await until(rowCount, (n) => n === before)).toBe(before);
    expect(await objectKeys()).toEqual([`media/${id}.png`]);
  });

  it('deletes the object with the asset', async () => {
    const del = await t.http().delete(`/api/v1/media/${id}`).set('authorization', auth);
    expect(del.status).toBe(204);
    expect(await objectKeys()).toEqual([]);
    expect((await t.http().get(`/media/${id}.png`)).status).toBe(404);
  });
});
