/**
 * `npm run bench -- media`: upload throughput of one large file through `POST /uploads/upload`
 * (and GraphQL's `uploadMedia`, a multipart request read by the same parser) against a bare node:http server piping the request to disk (alone, and with SHA-256 taken beside it:
 * the ceiling of any hashing server on the machine), and the service's peak RSS growth
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

/** GraphQL's multipart request: operations, map, then the file. */
const GRAPHQL_UPLOAD = {
  fields: {
    operations: JSON.stringify({
      query: 'mutation ($file: Upload!) { uploadMedia(file: $file) { id size } }',
      variables: { file: null },
    }),
    map: JSON.stringify({ 0: ['variables.file'] }),
  },
  file: '0',
};
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
  const hashDir = await tempDir('bench-bare-hash-');
  const mediaDir = path.join(sut.dataDir, 'media');
  const bare = await startChild(
    'bench/baselines/pipe-to-disk.server.js',
    { DATA_DIR: bareDir },
    await freePort(),
  );
  const bareHash = await startChild(
    'bench/baselines/pipe-to-disk.server.js',
    { DATA_DIR: hashDir, HASH_BESIDE: '1' },
    await freePort(),
  );
  const settle = async () => {
    for (const dir of [bareDir, hashDir, mediaDir])
      for (const f of await readdir(dir).catch(() => [] as string[]))
        await rm(path.join(dir, f), { force: true });
    execFileSync('sync');
  };
  try {
    const auth = { authorization: `Bearer ${await sut.token('bench')}` };
    // Per side: upload seconds, CPU per run (all threads, and the main thread alone: steadier
    // than throughput when the machine is shared, and it shows whether the request's thread is
    // what limits the upload), and for the service its peak RSS growth.
    const sides = [
      { server: 'bare node:http pipe to disk', child: bare, url: `${bare.url}/`, headers: {} },
      {
        server: 'bare pipe + SHA-256 beside it (ceiling)',
        child: bareHash,
        url: `${bareHash.url}/`,
        headers: {},
      },
      {
        server: 'POST /uploads/upload',
        child: sut.service,
        url: `${sut.service.url}/uploads/upload`,
        headers: auth,
      },
      {
        server: 'POST /graphql uploadMedia',
        child: sut.service,
        url: `${sut.service.url}/graphql`,
        headers: { ...auth, 'apollo-require-preflight': 'true' },
        form: GRAPHQL_UPLOAD,
      },
    ].map((side) => ({
      ...side,
      times: [] as number[],
      cpu: [] as number[],
      main: [] as number[],
      growth: [] as number[],
    }));
    for (const side of sides) await upload(side.url, side.headers, MiB, undefined, side.form); // warm-up: user row, JIT, hashing workers
    const loads: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      loads.push(load());
      // Each run starts the order at another side, so none always runs first.
      for (let k = 0; k < sides.length; k++) {
        const side = sides[(i + k) % sides.length];
        await settle();
        const pid = side.child.process.pid!;
        const [c0, m0, rss0] = [cpuMsOf(pid), mainThreadMs(pid), rssOf(pid)];
        const sampler = rssSampler(pid);
        side.times.push((await upload(side.url, side.headers, size, undefined, side.form)).seconds);
        side.cpu.push(cpuMsOf(pid) - c0);
        side.main.push(mainThreadMs(pid) - m0);
        side.growth.push(sampler.stop() - rss0);
      }
    }
    const miBs = (times: number[]) => UPLOAD_MIB / median(times);
    const spread = (times: number[]) =>
      `${(UPLOAD_MIB / Math.max(...times)).toFixed(0)}-${(UPLOAD_MIB / Math.min(...times)).toFixed(0)}`;
    printTable(
      `Upload of ${UPLOAD_MIB} MiB (median of ${RUNS} alternating runs)`,
      sides.map((side) => ({
        server: side.server,
        'MiB/s': miBs(side.times).toFixed(0),
        range: spread(side.times),
        ratio: (miBs(side.times) / miBs(sides[0].times)).toFixed(2),
        'CPU ms (main thread)': `${median(side.cpu).toFixed(0)} (${median(side.main).toFixed(0)})`,
        'peak RSS growth MiB (max)': (Math.max(...side.growth) / MiB).toFixed(1),
      })),
    );
    // The first large upload sets each process's high-water mark; later runs reuse that memory.
    const perRun = (growth: number[]) => growth.map((g) => (g / MiB).toFixed(1)).join(', ');
    console.log(
      `\nservice RSS growth per run (MiB, in order): ${perRun(sides[2].growth)}; bare pipe: ${perRun(sides[0].growth)}`,
    );
    console.log(`load average (1 min) ${median(loads).toFixed(2)} (median at the start of each run)`);
  } finally {
    await bare.stop();
    await bareHash.stop();
    await rm(bareDir, { recursive: true, force: true });
    await rm(hashDir, { recursive: true, force: true });
    await sut.stop();
  }
}

export async function run(): Promise<void> {
  await uploadBench();
}
