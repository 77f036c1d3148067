import type { JobSpec } from './executor.port';

/** Environment marker that ties a process (and its children) to its job, across restarts. */
export const JOB_ENV = 'MEDIA_JOB_ID';

/**
 * A job's whole environment, the same on every executor: none of the service's own variables
 * (no secrets), its directory as HOME and TMPDIR, OUTPUT_DIR and the job marker. `PATH` only
 * where the executor sets one (a container image brings its own).
 */
export function jobEnvironment(spec: JobSpec, path?: string): Record<string, string> {
  return {
    ...(path === undefined ? {} : { PATH: path }),
    HOME: spec.workDir,
    TMPDIR: spec.workDir,
    LANG: 'C.UTF-8',
    ...spec.env,
    OUTPUT_DIR: spec.outputDir,
    [JOB_ENV]: spec.jobId,
  };
}
