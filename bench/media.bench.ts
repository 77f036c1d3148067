/**
 * `npm run bench -- media`: upload throughput of one large file through `POST /uploads/upload`
 * against a bare node:http server piping the request to disk, and the service's peak RSS growth
 * meanwhile. Every figure is measured in the same run; the ratios are what count. (The list of
 * media is `npm run bench -- list`.)
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import {
  cpuMsOf,
  freePort,
  load,
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

/** CPU time of a process's main thread (its JavaScript and event loop) so far, in milliseconds. */
function mainThreadMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10; // USER_HZ 100
}

const UPLOAD_MIB = setting('BENCH_UPLOAD_MIB', 512, 8);
const RUNS = setting('BENCH_RUNS', 5, 1);

/**
 * The bare pipe swung from 436 to 842 MiB/s between runs when it wrote into whatever the previous
 * run had left dirty in the page cache. Each run now starts from the same state on both sides:
 * the earlier files removed and everything flushed (`sync`, outside the timing), and neither side
 * fsyncs. Runs alternate which side goes first, and the ratio is of the medians.
 */
async function uploadBench() {
  const size = UPLOAD_MIB * MiB;
  const sut = await startService();
  const bareDir = await tempDir('bench-bare-');
  const mediaDir = path.join(sut.dataDir, 'media');
  const bare = await startChild(
    'bench/baselines/pipe-to-disk.server.js',
    { DATA_DIR: bareDir },
    await freePort(),
  );
  const settle = async () => {
    for (const dir of [bareDir, mediaDir])
      for (const f of await readdir(dir).catch(() => [] as string[]))
        await rm(path.join(dir, f), { force: true });
    execFileSync('sync');
  };
  try {
    const auth = { authorization: `Bearer ${await sut.token('bench')}` };
    await upload(`${sut.service.url}/uploads/upload`, auth, MiB); // warm-up: user row, JIT, hashing worker
    await upload(`${bare.url}/`, {}, MiB);
    const bareTimes: number[] = [];
    const serviceTimes: number[] = [];
    // CPU per run (all threads, and the main thread alone): steadier than throughput when the
    // machine is shared, and it shows whether the request's thread is what limits the upload.
    const bareCpu: number[] = [];
    const bareMain: number[] = [];
    const serviceCpu: number[] = [];
    const serviceMain: number[] = [];
    const timed = async (pid: number, cpu: number[], main: number[], run: () => Promise<number>) => {
      const [c0, m0] = [cpuMsOf(pid), mainThreadMs(pid)];
      const seconds = await run();
      cpu.push(cpuMsOf(pid) - c0);
      main.push(mainThreadMs(pid) - m0);
      return seconds;
    };
    const growth: number[] = [];
    const loads: number[] = [];
    const runBare = async () => {
      await settle();
      const pid = bare.process.pid!;
      bareTimes.push(
        await timed(pid, bareCpu, bareMain, async () => (await upload(`${bare.url}/`, {}, size)).seconds),
      );
    };
    const runService = async () => {
      await settle();
      const pid = sut.service.process.pid!;
      const before = rssOf(pid);
      const sampler = rssSampler(pid);
      serviceTimes.push(
        await timed(
          pid,
          serviceCpu,
          serviceMain,
          async () => (await upload(`${sut.service.url}/uploads/upload`, auth, size)).seconds,
        ),
      );
      growth.push(sampler.stop() - before);
    };
    for (let i = 0; i < RUNS; i++) {
      loads.push(load());
      if (i % 2 === 0) {
        await runBare();
        await runService();
      } else {
        await runService();
        await runBare();
      }
    }
    const bareMiBs = UPLOAD_MIB / median(bareTimes);
    const serviceMiBs = UPLOAD_MIB / median(serviceTimes);
    const spread = (times: number[]) =>
      `${(UPLOAD_MIB / Math.max(...times)).toFixed(0)}-${(UPLOAD_MIB / Math.min(...times)).toFixed(0)}`;
    printTable(`Upload of ${UPLOAD_MIB} MiB (median of ${RUNS} alternating runs)`, [
      {
        server: 'bare node:http pipe to disk',
        'MiB/s': bareMiBs.toFixed(0),
        range: spread(bareTimes),
        ratio: '1.00',
        'CPU ms (main thread)': `${median(bareCpu).toFixed(0)} (${median(bareMain).toFixed(0)})`,
      },
      {
        server: 'POST /uploads/upload',
        'MiB/s': serviceMiBs.toFixed(0),
        range: spread(serviceTimes),
        ratio: (serviceMiBs / bareMiBs).toFixed(2),
        'CPU ms (main thread)': `${median(serviceCpu).toFixed(0)} (${median(serviceMain).toFixed(0)})`,
      },
    ]);
    console.log(
      `\nservice peak RSS growth during the upload: ${(Math.max(...growth) / MiB).toFixed(1)} MiB (max of ${RUNS}); ` +
        `load average (1 min) ${median(loads).toFixed(2)} (median at the start of each run)`,
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
