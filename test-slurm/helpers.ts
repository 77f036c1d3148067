import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export { PROGRAM, programModel } from '../test/helpers/jobs';

/** Fails at once, with what to do, when no cluster answers. */
export function requireCluster(): void {
  try {
    execFileSync('squeue', ['--noheader'], { stdio: 'pipe' });
  } catch (err) {
    throw new Error(
      `no Slurm cluster answers (${(err as Error).message.trim()}); start one: scripts/slurm-cluster.sh`,
    );
  }
}

/** A directory the service's processes and the jobs (as any user) can use. */
export function sharedDir(prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  chmodSync(dir, 0o755);
  return dir;
}

/** What Slurm itself says of a job (squeue, including ended ones it still remembers). */
export function slurmJob(
  externalId: string,
): { state: string; name: string; limit: string; cpus: string; partition: string } | null {
  let out: string;
  try {
    out = execFileSync(
      'squeue',
      ['--noheader', '--states=all', `--jobs=${externalId}`, '--format=%T|%j|%l|%C|%P'],
      {
        encoding: 'utf8',
        stdio: 'pipe',
      },
    ).trim();
  } catch {
    return null; // squeue fails when asked about one job it does not know
  }
  if (!out) return null;
  const [state, name, limit, cpus, partition] = out.split('|');
  return { state, name, limit, cpus, partition };
}

/** Slurm job ids of jobs named `name`. */
export function slurmJobsNamed(name: string): string[] {
  return execFileSync('squeue', ['--noheader', '--states=all', `--name=${name}`, '--format=%i'], {
    encoding: 'utf8',
  })
    .split('\n')
    .filter(Boolean);
}
