import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { JobSpec } from './executor.port';

/** Environment marker that ties a process (and its children) to its job, across restarts. */
export const JOB_ENV = 'MEDIA_JOB_ID';

/**
 * A job's whole environment, the same on every executor: none of the service's own variables
 * (no secrets), its directory as HOME and TMPDIR, OUTPUT_DIR and the job marker. `PATH` only
 * where the executor sets one (a container image brings its own).
 */
export function jobEnvironment(
  spec: JobSpec,
  searchPath?: string,
  secrets: 'env' | 'files' = 'env',
): Record<string, string> {
  return {
    ...(searchPath === undefined ? {} : { PATH: searchPath }),
    HOME: spec.workDir,
    TMPDIR: spec.workDir,
    LANG: 'C.UTF-8',
    ...spec.env,
    // Secret names cannot be one of the variables below (docs/secrets.md), nor end in _FILE.
    ...Object.fromEntries(
      (spec.secrets ?? []).map((s) =>
        secrets === 'env' ? [s.name, s.value] : [`${s.name}_FILE`, secretFileOf(spec.workDir, s.name)],
      ),
    ),
    OUTPUT_DIR: spec.outputDir,
    [JOB_ENV]: spec.jobId,
  };
}

/** Where a cluster job's secret files are: in its own directory, which only the job's user reads. */
const SECRETS_DIR = '.secrets';

export function secretFileOf(workDir: string, name: string): string {
  return path.join(workDir, SECRETS_DIR, name);
}

/**
 * Writes a cluster job's secrets as files only their owner may read (0600 in a 0700 directory),
 * before it is submitted: the nodes read them from the shared JOBS_DIR. They go with the job's
 * directory when the job has ended.
 */
export function writeSecretFiles(spec: JobSpec): void {
  if (!spec.secrets?.length) return;
  const dir = path.join(spec.workDir, SECRETS_DIR);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const s of spec.secrets) writeFileSync(secretFileOf(spec.workDir, s.name), s.value, { mode: 0o600 });
}
