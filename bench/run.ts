/**
 * `npm run bench -- <name> [--smoke]`: runs one benchmark of bench/ (or `all`) and prints its
 * ratios. `--smoke` runs it in seconds on tiny sizes, only to prove it still works (CI does).
 */
import 'reflect-metadata';
import * as batch from './batch.bench';
import * as billing from './billing.bench';
import * as jobs from './jobs.bench';
import * as list from './list.bench';
import * as media from './media.bench';
import * as scale from './scale.bench';
import * as slurm from './slurm.bench';

const benchmarks: Record<string, { run(): Promise<void> }> = {
  list,
  media,
  jobs,
  batch,
  // The jobs benchmark's fair-share case alone (it also runs as the last case of `jobs`).
  fairshare: { run: jobs.fairShare },
  billing,
  slurm,
  scale,
};

async function main() {
  const name = process.argv.slice(2).find((a) => !a.startsWith('--'));
  const chosen = name === 'all' ? Object.keys(benchmarks) : name && benchmarks[name] ? [name] : [];
  if (!chosen.length) {
    console.error(`usage: npm run bench -- <${[...Object.keys(benchmarks), 'all'].join('|')}> [--smoke]`);
    process.exit(2);
  }
  for (const n of chosen) {
    console.log(`\n# ${n}`);
    await benchmarks[n].run();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
