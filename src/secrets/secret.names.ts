import { JOB_ENV } from '../executors/job.env';

/** A secret's name is the environment variable a job gets it in. */
export const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/**
 * Variables every job gets from the executors (docs/executors.md), which a secret must not
 * shadow. `<NAME>_FILE` names are refused too: on clusters a secret's file path is passed as
 * `<NAME>_FILE`, which another secret of that name would clash with.
 */
const RESERVED = new Set(['PATH', 'HOME', 'TMPDIR', 'LANG', 'OUTPUT_DIR', JOB_ENV]);

/** What is wrong with a secret name, or null when it is a usable one. */
export function secretNameProblem(name: unknown): string | null {
  if (typeof name !== 'string' || !SECRET_NAME.test(name))
    return 'must be an environment variable name: a letter or _, then letters, digits or _ (at most 128)';
  if (RESERVED.has(name)) return `${name} is set by the service for every job`;
  if (name.endsWith('_FILE'))
    return 'must not end in _FILE (that name carries a secret file path on clusters)';
  return null;
}
