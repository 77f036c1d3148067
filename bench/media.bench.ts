/**
 * `npm run bench -- media`:
 * 1. upload throughput of one large file through `POST /uploads/upload` against a bare
 *    node:http server piping the request to disk, and the service's peak RSS growth meanwhile;
 * 2. `GET /api/v1/media` and the same GraphQL query (50 items) against a bare node:http + pg
 *    handler running the same SQL, under autocannon.
 * Every figure is measured in the same run; the ratios are what count.
 */
import autocannon from 'autocannon';
import http from 'node:http';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { Client } from 'pg';
import {
  freePort,
  median,
  MiB,
  printTable,
  rssOf,
  rssSampler,
  startChild,
  startService,
  tempDir,
} from './lib';

const UPLOAD_MIB = Number(process.env.BENCH_UPLOAD_MIB ?? 512);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const DURATION = Number(process.env.BENCH_SECONDS ?? 10);

/** Streams a multipart upload of `size` bytes (a PNG signature, then filler) from one reused buffer. */
function upload(url: string, headers: Record<string, string>, size: number): Promise<number> {
  // As curl sends it (browsers use a similar 38-character one); busboy's search skips by its length.
  const boundary = '------------------------a1b2c3d4e5f60718';
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.png"\r\n` +
      'Content-Type: image/png\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const block = Buffer.alloc(MiB, 7);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(block);
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const req = http.request(url, {
      method: 'POST',
      headers: {
        ...headers,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': String(head.length + size + tail.length),
      },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`upload answered ${res.statusCode}`));
        resolve(Number(process.hrtime.bigint() - started) / 1e9);
      });
    });
    let sent = 0;
    const pump = () => {
      while (sent < size) {
        const n = Math.min(block.length, size - sent);
        sent += n;
        if (!req.write(n === block.length ? block : block.subarray(0, n)))
          return void req.once('drain', pump);
      }
      req.end(tail);
    };
    req.write(head);
    pump();
  });
}

async function uploadBench() {
  const size = UPLOAD_MIB * MiB;
  const sut = await startService();
  const bareDir = await tempDir('bench-bare-');
  const bare = await startChild(
    'bench/baselines/pipe-to-disk.server.js',
    { DATA_DIR: bareDir },
    await freePort(),
  );
  try {
    const auth = { authorization: `Bearer ${await sut.token('bench')}` };
    await upload(`${sut.service.url}/uploads/upload`, auth, MiB); // warm-up: user row, JIT
    const bareTimes: number[] = [];
    const serviceTimes: number[] = [];
    const growth: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      bareTimes.push(await upload(`${bare.url}/`, {}, size));
      // Between runs, outside the timing: the disk should not fill up.
      for (const f of await readdir(bareDir)) await rm(path.join(bareDir, f));
      const pid = sut.service.process.pid!;
      const before = rssOf(pid);
      const sampler = rssSampler(pid);
      serviceTimes.push(await upload(`${sut.service.url}/uploads/upload`, auth, size));
      growth.push(sampler.stop() - before);
    }
    const bareMiBs = UPLOAD_MIB / median(bareTimes);
    const serviceMiBs = UPLOAD_MIB / median(serviceTimes);
    printTable(`Upload of ${UPLOAD_MIB} MiB (median of ${RUNS})`, [
      { server: 'bare node:http pipe to disk', 'MiB/s': bareMiBs.toFixed(0), ratio: '1.00' },
      {
        server: 'POST /uploads/upload',
        'MiB/s': serviceMiBs.toFixed(0),
        ratio: (serviceMiBs / bareMiBs).toFixed(2),
      },
    ]);
    console.log(
      `\nservice peak RSS growth during the upload: ${(Math.max(...growth) / MiB).toFixed(1)} MiB (max of ${RUNS})`,
    );
  } finally {
    await bare.stop();
    await rm(bareDir, { recursive: true, force: true });
    await sut.stop();
  }
}

async function cannon(opts: autocannon.Options): Promise<autocannon.Result> {
  const result = await autocannon({ connections: 10, duration: DURATION, ...opts });
  if (result.non2xx || result.errors)
    throw new Error(`${opts.url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return result;
}

async function listBench() {
  const sut = await startService();
  const auth = `Bearer ${await sut.token('lister')}`;
  await fetch(`${sut.service.url}/api/v1/media`, { headers: { authorization: auth } });
  const db = new Client({ connectionString: sut.db.url });
  await db.connect();
  const { rows } = await db.query<{ id: string }>(`select id from users where subject = 'lister'`);
  const ownerId = rows[0].id;
  // 60 assets, so a page of 50 is full and there is a next page.
  await db.query(
    `insert into media_assets (id, owner_type, owner_id, type, status, image_name, extension, content_type, size, sha256, tags, created_at, updated_at)
     select gen_random_uuid(), 'user', $1, 'source_asset', 'live', 'file-' || i || '.png', 'png', 'image/png', 1000, repeat('a', 64),
            array['tag' || (i % 5), 'bench'], now() - i * interval '1 second', now()
     from generate_series(1, 60) i`,
    [ownerId],
  );
  await db.end();
  const bare = await startChild(
    'bench/baselines/media-list.server.js',
    { DATABASE_URL: sut.db.url, OWNER_ID: ownerId, CDN_URL: sut.service.url },
    await freePort(),
  );
  const query =
    'query { mediaBaseUrl media(first: 50) { nodes { id imageName url status type tags createdAt } pageInfo { hasNextPage endCursor } } }';
  try {
    const base = await cannon({ url: `${bare.url}/api/v1/media` });
    const rest = await cannon({
      url: `${sut.service.url}/api/v1/media?limit=50`,
      headers: { authorization: auth },
    });
    const gql = await cannon({
      url: `${sut.service.url}/graphql`,
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify({ query }),
    });
    const row = (name: string, r: autocannon.Result) => ({
      server: name,
      'req/s': r.requests.average.toFixed(0),
      'p50 ms': r.latency.p50,
      'p99 ms': r.latency.p99,
      ratio: (r.requests.average / base.requests.average).toFixed(2),
    });
    printTable(`List of 50 media, 10 connections, ${DURATION} s each`, [
      row('bare node:http + pg', base),
      row('GET /api/v1/media', rest),
      row('POST /graphql (same query)', gql),
    ]);
  } finally {
    await bare.stop();
    await sut.stop();
  }
}

export async function run(): Promise<void> {
  await uploadBench();
  await listBench();
}
