/**
 * `npm run bench -- media`: upload throughput of one large file through `POST /uploads/upload`
 * against a bare node:http server piping the request to disk, and the service's peak RSS growth
 * meanwhile. Every figure is measured in the same run; the ratios are what count. (The list of
 * media is `npm run bench -- list`.)
 */
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import {
  freePort,
  median,
  MiB,
  printTable,
  rssOf,
  rssSampler,
  setting,
  startChild,
  startService,
  tempDir,
  upload,
} from './lib';

const UPLOAD_MIB = setting('BENCH_UPLOAD_MIB', 512, 8);
const RUNS = setting('BENCH_RUNS', 3, 1);

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
      bareTimes.push((await upload(`${bare.url}/`, {}, size)).seconds);
      // Between runs, outside the timing: the disk should not fill up.
      for (const f of await readdir(bareDir)) await rm(path.join(bareDir, f));
      const pid = sut.service.process.pid!;
      const before = rssOf(pid);
      const sampler = rssSampler(pid);
      serviceTimes.push((await upload(`${sut.service.url}/uploads/upload`, auth, size)).seconds);
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

export async function run(): Promise<void> {
  await uploadBench();
}
