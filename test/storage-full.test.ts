import { execFileSync } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, statfsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createLogger } from '../src/common/logger';
import { MediaAsset } from '../src/media/media.entity';
import { startTestApp, type TestApp } from './helpers/app';
import { deploy, programModel, waitForJob } from './helpers/jobs';
import { pngBytes, storedMedia, uploadFile } from './helpers/media';
import { sample } from './helpers/metrics';

/**
 * A full disk, for real: the media store and JOBS_DIR are small tmpfs mounts (the tests run as
 * root here and in CI). A machine where mounting is not allowed fails this suite: it proves
 * nothing otherwise.
 */

jest.setTimeout(60_000);

const MiB = 1024 * 1024;
let t: TestApp;
let alice: string;
let mediaDir: string;
let jobsDir: string;
let s3: S3Peer;
let onS3: TestApp;
const lines: Record<string, unknown>[] = [];

const mounted: string[] = [];
function mount(dir: string, size: string): void {
  mkdirSync(dir, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir]);
  mounted.push(dir);
}

beforeAll(async () => {
  const log = createLogger('info', {
    destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
  });
  t = await startTestApp({ LOCAL_EXECUTOR_TRUST: 'any' }, { log });
  mediaDir = path.join(t.config.dataDir, 'media');
  jobsDir = t.config.jobsDir;
  mount(mediaDir, '8m');
  mount(jobsDir, '16m');
  // The store is half full already: a 6 MiB file does not fit.
  writeFileSync(path.join(mediaDir, 'filler'), Buffer.alloc(4 * MiB));
  alice = `Bearer ${await t.tokenFor('alice')}`;
  s3 = await S3Peer.start();
  // The service takes S3 credentials from the AWS default chain, as in production.
  process.env.AWS_ACCESS_KEY_ID = 'test';
  process.env.AWS_SECRET_ACCESS_KEY = 'test';
  onS3 = await startTestApp(
    {
      STORAGE: 's3',
      S3_BUCKET: 'media',
      S3_ENDPOINT: s3.url,
      S3_REGION: 'us-east-1',
      LOCAL_EXECUTOR_TRUST: 'any',
      LOG_LEVEL: 'silent',
    },
    { databaseUrl: t.databaseUrl, issuer: t.issuer },
  );
  mount(onS3.config.jobsDir, '2m');
});
afterAll(async () => {
  await onS3?.close();
  await s3?.close();
  await t?.close();
  for (const dir of mounted) execFileSync('umount', [dir]);
});

const SIX_MIB = Buffer.concat([pngBytes(), Buffer.alloc(6 * MiB)]);
const fullWarnings = () =>
  lines.filter((l) => l.level === 40 && l.msg === 'media store full: a file was refused');

describe('a full media store', () => {
  it('answers a REST upload 507 INSUFFICIENT_STORAGE, logs it at warn, and keeps nothing', async () => {
    const before = await storedMedia(t);
    const res = await uploadFile(t, alice, SIX_MIB, 'big.png');
    expect(res.status).toBe(507);
    expect(res.body).toEqual({
      error: { code: 'INSUFFICIENT_STORAGE', message: expect.stringMatching(/media store is full/) },
    });
    const after = await storedMedia(t);
    expect(after.rows).toEqual(before.rows);
    expect(after.files.sort()).toEqual(before.files.sort());
    const [warning] = fullWarnings();
    expect(warning).toMatchObject({ store: 'media', freeBytes: expect.any(Number) });
    expect(warning.freeBytes).toBeLessThan(6 * MiB);
  });

  it('answers a GraphQL upload 507 with extensions.code INSUFFICIENT_STORAGE, and keeps nothing', async () => {
    const before = await storedMedia(t);
    const res = await t
      .http()
      .post('/graphql')
      .set('authorization', alice)
      .set('apollo-require-preflight', 'true')
      .field(
        'operations',
        JSON.stringify({
          query: 'mutation ($f: Upload!) { uploadMedia(file: $f) { id } }',
          variables: { f: null },
        }),
      )
      .field('map', JSON.stringify({ 0: ['variables.f'] }))
      .attach('0', SIX_MIB, 'big.png');
    expect(res.status).toBe(507);
    expect(res.body.errors[0]).toMatchObject({
      message: expect.stringMatching(/media store is full/),
      extensions: { code: 'INSUFFICIENT_STORAGE' },
    });
    const after = await storedMedia(t);
    expect(after.rows).toEqual(before.rows);
    expect(after.files.sort()).toEqual(before.files.sort());
  });

  it('leaves the service working: a file that fits is stored', async () => {
    const res = await uploadFile(t, alice, pngBytes());
    expect(res.status).toBe(200);
  });

  it('fails a job whose output does not fit, saying so, and keeps none of its outputs', async () => {
    const before = await storedMedia(t);
    const model = await programModel(t, alice, `big ${6 * MiB}`);
    const { jobId } = await deploy(t, alice, model, {});
    const job = await waitForJob(t, alice, jobId);
    expect(job.status.toLowerCase()).toBe('failed');
    expect(job.error).toMatch(/could not keep the output big\.bin: the media store is full/);
    expect(await t.runtime.orm.em.fork().count(MediaAsset, { jobId })).toBe(0);
    expect((await storedMedia(t)).files.sort()).toEqual(before.files.sort());
    expect(fullWarnings().some((l) => l.jobId === jobId)).toBe(true);
  });

  it('shows the free space of each local store in /metrics', async () => {
    // The previous test's job may still be removing its files: compare once the space holds still.
    const free = (dir: string) => {
      const s = statfsSync(dir);
      return s.bavail * s.bsize;
    };
    let text = '';
    let before: number[] = [];
    for (let i = 0; i < 50; i++) {
      before = [free(mediaDir), free(jobsDir)];
      text = await t.runtime.metrics.registry.getSingleMetricAsString('storage_free_bytes');
      if (before.join() === [free(mediaDir), free(jobsDir)].join()) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(sample(text, 'storage_free_bytes', { store: 'media' })).toBe(before[0]);
    expect(sample(text, 'storage_free_bytes', { store: 'jobs' })).toBe(before[1]);
    expect(sample(text, 'storage_free_bytes', { store: 'media' })).toBeLessThanOrEqual(4 * MiB);
  });
});

/**
 * Stands in for an S3-compatible store (path-style requests): it keeps objects in memory and
 * serves them, until `full` says how it refuses writes; deletes always succeed.
 */
class S3Peer {
  full: { status: number; code: string } | null = null;
  writes = 0;
  private readonly objects = new Map<string, Buffer>();
  private constructor(private readonly server: http.Server) {}

  static async start(): Promise<S3Peer> {
    const peer: S3Peer = new S3Peer(http.createServer((req, res) => peer.answer(req, res)));
    await new Promise<void>((resolve) => peer.server.listen(0, '127.0.0.1', resolve));
    return peer;
  }

  private answer(req: http.IncomingMessage, res: http.ServerResponse): void {
    const key = new URL(req.url!, 'http://peer').pathname;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'DELETE') {
        this.objects.delete(key);
        return void res.writeHead(204).end();
      }
      if (req.method === 'GET') {
        const object = this.objects.get(key);
        if (object) return void res.writeHead(200, { 'content-length': object.length }).end(object);
        return void this.error(res, 404, 'NoSuchKey');
      }
      this.writes++;
      if (this.full) return void this.error(res, this.full.status, this.full.code);
      this.objects.set(key, Buffer.concat(chunks));
      res.writeHead(200, { etag: '"1"' }).end();
    });
  }

  private error(res: http.ServerResponse, status: number, code: string): void {
    res
      .writeHead(status, { 'content-type': 'application/xml' })
      .end(
        `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${code}</Message></Error>`,
      );
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

describe('a full S3 store', () => {
  it.each([
    ['a bucket quota (Ceph: 403 QuotaExceeded)', 403, 'QuotaExceeded'],
    ['a full server (MinIO: 507 XMinioStorageFull)', 507, 'XMinioStorageFull'],
  ])('%s answers an upload 507 INSUFFICIENT_STORAGE and keeps no row', async (_what, status, code) => {
    s3.full = { status, code };
    const writes = s3.writes;
    const rows = await onS3.runtime.orm.em.fork().count(MediaAsset, {});
    const res = await uploadFile(onS3, alice, pngBytes());
    expect(s3.writes).toBeGreaterThan(writes);
    expect(res.status).toBe(507);
    expect(res.body).toMatchObject({ error: { code: 'INSUFFICIENT_STORAGE' } });
    expect(await onS3.runtime.orm.em.fork().count(MediaAsset, {})).toBe(rows);
    const text = await onS3.runtime.metrics.registry.getSingleMetricAsString('storage_free_bytes');
    expect(sample(text, 'storage_free_bytes', { store: 'media' })).toBeUndefined();
  });
});

describe('an object too large for the S3 store', () => {
  it('answers an upload 413 PAYLOAD_TOO_LARGE (not 507: freeing room would not help) and keeps no row', async () => {
    // What AWS S3 answers an object over its largest size.
    s3.full = { status: 400, code: 'EntityTooLarge' };
    const writes = s3.writes;
    const rows = await onS3.runtime.orm.em.fork().count(MediaAsset, {});
    const res = await uploadFile(onS3, alice, pngBytes());
    expect(s3.writes).toBeGreaterThan(writes);
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({
      error: { code: 'PAYLOAD_TOO_LARGE', message: 'the file is larger than the media store accepts' },
    });
    expect(await onS3.runtime.orm.em.fork().count(MediaAsset, {})).toBe(rows);
  });
});

describe('a full JOBS_DIR', () => {
  it('fails a job whose input cannot be staged there, saying so', async () => {
    s3.full = null;
    // Inputs are staged into the job's directory when storage is not this machine's disk.
    const input = await uploadFile(onS3, alice, Buffer.concat([pngBytes(), Buffer.alloc(2 * MiB)]));
    expect(input.status).toBe(200);
    writeFileSync(path.join(onS3.config.jobsDir, 'filler'), Buffer.alloc(1 * MiB));
    const model = await programModel(onS3, alice, 'argv', {
      args: { f: { type: 'file', format: ':value' } },
    });
    const { jobId } = await deploy(onS3, alice, model, { f: input.body.media.id });
    const job = await waitForJob(onS3, alice, jobId);
    expect(job.status.toLowerCase()).toBe('failed');
    expect(job.error).toMatch(/the jobs directory \(JOBS_DIR\) is full/);
  });
});
