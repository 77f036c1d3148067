/** `npm run bench -- <name>`: runs one benchmark of bench/ and prints its ratios. */
import 'reflect-metadata';
import * as billing from './billing.bench';
import * as jobs from './jobs.bench';
import * as media from './media.bench';
import * as slurm from './slurm.bench';

const benchmarks: Record<string, { run(): Promise<void> }> = { media, jobs, billing, slurm };

async function main() {
  const name = process.argv[2];
  const bench = name ? benchmarks[name] : undefined;
  if (!bench) {
    console.error(`usage: npm run bench -- <${Object.keys(benchmarks).join('|')}>`);
    process.exit(2);
  }
  await bench.run();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
