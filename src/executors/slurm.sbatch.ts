import type { SlurmContainerRuntime } from '../config';
import type { MachineTypes } from '../common/machine-types';
import type { JobExit, JobPriority, JobSpec } from './executor.port';

/** Every Slurm job of the service is named after our job id, so that it can be found again. */
export const JOB_NAME_PREFIX = 'media-';
/** The job's own files in its directory: Slurm's output files, the script's exit status. */
export const JOB_FILES_DIR = '.job';

export function jobNameOf(jobId: string): string {
  return JOB_NAME_PREFIX + jobId;
}

/** Models of the service itself name containers `builtin/...`: their programs are the service's. */
export function isBuiltinContainer(container: string): boolean {
  return container.startsWith('builtin/');
}

export interface SbatchOptions {
  /** The batch script (slurm.job.sh). */
  script: string;
  runtime: SlurmContainerRuntime;
  machineTypes: MachineTypes | null;
  /** Program names resolved by the service itself (`media-demo` -> node + its script). */
  programs: Record<string, string[]>;
  /** Who pays and how urgent (docs/governance.md): Slurm's fair share and QOS decide from them. */
  governance?: SlurmGovernance;
}

/** Owners' Slurm accounts and the QOS of each priority (GovernanceConfig's Slurm part). */
export interface SlurmGovernance {
  /** `user:<id>` / `team:<id>` -> account (SLURM_ACCOUNTS_FILE). */
  accounts: Readonly<Record<string, string>>;
  defaultAccount: string | undefined;
  qos: Readonly<Partial<Record<JobPriority, string>>>;
}

/**
 * Nice of a low-priority job without a QOS of its own: it sorts below the service's other jobs
 * (a negative nice, to raise `high`, needs Slurm operator rights: `high` takes a QOS).
 */
export const LOW_PRIORITY_NICE = 1000;

/**
 * `--account` and `--qos`/`--nice` of a job: the owner's account from the mapping, else the
 * machine type's, else the default; the priority's QOS, else the machine type's.
 */
function governanceArgs(
  spec: JobSpec,
  g: SlurmGovernance | undefined,
  machine: { account?: string; qos?: string },
): string[] {
  const account = g?.accounts[`${spec.owner.type}:${spec.owner.id}`] ?? machine.account ?? g?.defaultAccount;
  const priority = spec.priority ?? 'normal';
  const qos = g?.qos[priority] ?? machine.qos;
  return [
    ...(account ? [`--account=${account}`] : []),
    ...(qos ? [`--qos=${qos}`] : []),
    ...(!g?.qos[priority] && priority === 'low' ? [`--nice=${LOW_PRIORITY_NICE}`] : []),
  ];
}

/** Slurm counts time limits in whole minutes. */
export function timeLimitMinutes(timeoutSeconds: number): number {
  return Math.max(1, Math.ceil(timeoutSeconds / 60));
}

/**
 * The arguments of `sbatch` for a job: options, then the batch script, then the job's argv as
 * the script's own arguments (sbatch hands them over as they are: no shell line is made of them).
 * Throws when the machine type is not defined in the machine types file.
 */
export function sbatchArgs(spec: JobSpec, opts: SbatchOptions): string[] {
  const { options, argv } = jobOptions(spec, opts);
  return [
    '--parsable',
    `--job-name=${jobNameOf(spec.jobId)}`,
    `--chdir=${spec.workDir}`,
    // Relative to --chdir, so that no character of the path is read as a file name pattern.
    `--output=${JOB_FILES_DIR}/stdout`,
    `--error=${JOB_FILES_DIR}/stderr`,
    ...options,
    opts.script,
    ...argv,
  ];
}

/**
 * What sbatch is told of a job besides its name and directory (environment, requeue, nodes, time,
 * machine type, container), and the argv the batch script runs. Jobs whose options are the same
 * can be tasks of one job array; their argv are their own.
 */
export function jobOptions(spec: JobSpec, opts: SbatchOptions): { options: string[]; argv: string[] } {
  const options = [
    // The job gets sbatch's own environment, which the worker makes up of exactly the variables
    // it passes. (A list of names would make Slurm 22.05 add the user's login environment.)
    '--export=ALL',
    // A job that failed with its node must not run again behind the service's back.
    '--no-requeue',
    `--nodes=${spec.machineCount}`,
    `--time=${timeLimitMinutes(spec.timeoutSeconds)}`,
    ...machineArgs(spec.machineType, opts.machineTypes),
    ...governanceArgs(spec, opts.governance, opts.machineTypes?.get(spec.machineType)?.slurm ?? {}),
  ];
  let argv = spec.argv;
  const [program, ...rest] = argv;
  if (Object.hasOwn(opts.programs, program)) argv = [...opts.programs[program], ...rest];
  // The service's own programs are no container's: they run as they do on the worker's host.
  const runtime = isBuiltinContainer(spec.container) ? 'none' : opts.runtime;
  switch (runtime) {
    case 'pyxis':
      options.push(
        `--container-image=${spec.container}`,
        `--container-mounts=${spec.workDir}`,
        `--container-workdir=${spec.workDir}`,
      );
      break;
    case 'oci':
      options.push(`--container=${spec.container}`);
      break;
    case 'apptainer':
      argv = [
        'apptainer',
        'exec',
        '--bind',
        spec.workDir,
        '--pwd',
        spec.workDir,
        apptainerImage(spec.container),
        ...argv,
      ];
      break;
    case 'none':
      break;
  }
  return { options, argv };
}

/** Job arrays are named `media-array-<key>`; each task's directory holds the key (ARRAY_MARK). */
export const ARRAY_NAME_PREFIX = 'media-array-';
/** In a task's `.job/`: the array's directory and the task's index, one per line. */
export const ARRAY_MARK = 'array';

/**
 * The arguments of `sbatch` for a job array of `count` tasks sharing `options` (jobOptions): run
 * in the array's directory, where the entry named after each task id links to that task's job
 * directory, so that each task's output files are its job's (`%a`). No task's argv or
 * environment is on the command line: the array script reads them from the task's directory.
 */
export function arraySbatchArgs(a: {
  key: string;
  dir: string;
  count: number;
  /** Tasks running at once; 0: no limit. */
  limit: number;
  options: string[];
  arrayScript: string;
  jobScript: string;
}): string[] {
  return [
    '--parsable',
    `--job-name=${ARRAY_NAME_PREFIX}${a.key}`,
    `--chdir=${a.dir}`,
    `--output=%a/${JOB_FILES_DIR}/stdout`,
    `--error=%a/${JOB_FILES_DIR}/stderr`,
    `--array=0-${a.count - 1}${a.limit > 0 ? `%${a.limit}` : ''}`,
    ...a.options,
    a.arrayScript,
    a.jobScript,
  ];
}

/** Words as `sh` reads them back (`eval "set -- $(cat file)"`): each one single-quoted. */
export function shellWords(words: readonly string[]): string {
  return words.map((w) => `'${w.replaceAll("'", `'\\''`)}'`).join(' ');
}

/** An environment as `sh` reads it back (`set -a; . file`); names must be shell names. */
export function shellEnvironment(env: Record<string, string>): string {
  return Object.entries(env)
    .map(([name, value]) => {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
        throw new Error(`the environment variable name "${name}" cannot be passed to a Slurm array task`);
      return `${name}=${shellWords([value])}\n`;
    })
    .join('');
}

/**
 * A job id as squeue prints it (`%i`), as the ids of the jobs it stands for: `123`, an array
 * task `123_5`, or tasks Slurm shows collapsed while they are pending, `123_[5-7,9%4]`
 * (`123_5`, `123_6`, `123_7`, `123_9`; `%4` is the array's limit).
 */
export function expandJobId(id: string): string[] {
  const m = /^(\d+)_\[([^\]]*)\]$/.exec(id);
  if (!m) return [id];
  const out: string[] = [];
  for (const part of m[2].split('%')[0].split(',')) {
    const range = /^(\d+)(?:-(\d+))?(?::(\d+))?$/.exec(part.trim());
    if (!range) continue;
    const from = Number(range[1]);
    const to = range[2] === undefined ? from : Number(range[2]);
    const step = range[3] === undefined ? 1 : Math.max(1, Number(range[3]));
    for (let i = from; i <= to; i += step) out.push(`${m[1]}_${i}`);
  }
  return out;
}

/** The array's job id of an array task's id (`123_5` -> `123`); null for a job of its own. */
export function arrayIdOf(externalId: string): string | null {
  const m = /^(\d+)_\d+$/.exec(externalId);
  return m ? m[1] : null;
}

/** A container reference as apptainer takes it: a registry image unless it names a source. */
function apptainerImage(container: string): string {
  return container.includes('://') || container.startsWith('/') || container.endsWith('.sif')
    ? container
    : `docker://${container}`;
}

function machineArgs(machineType: string, types: MachineTypes | null): string[] {
  if (!types) return [`--partition=${machineType}`];
  const type = types.get(machineType);
  if (!type)
    throw new Error(
      `the machine type "${machineType}" is not defined (MACHINE_TYPES_FILE); the job cannot run`,
    );
  const s = type.slurm ?? {};
  return [
    ...(s.partition ? [`--partition=${s.partition}`] : []),
    ...(s.gres ? [`--gres=${s.gres}`] : []),
    ...(s.cpus ? [`--cpus-per-task=${s.cpus}`] : []),
    ...(s.memory ? [`--mem=${s.memory}`] : []),
  ];
}

/** One line of `squeue --format=SQUEUE_FORMAT`. */
export interface QueuedJob {
  id: string;
  state: string;
  reason: string | null;
  nodes: string[];
  /** Epoch seconds (SLURM_TIME_FORMAT=%s), null before it started. */
  startedAt: number | null;
  name: string;
}

export const SQUEUE_FORMAT = '%i|%T|%r|%N|%S|%j';

export function parseSqueue(text: string): QueuedJob[] {
  const jobs: QueuedJob[] = [];
  for (const line of text.split('\n')) {
    const [id, state, reason, nodes, start, ...name] = line.trim().split('|');
    if (!id || !state) continue;
    const startedAt = /^\d+$/.test(start ?? '') ? Number(start) : null;
    jobs.push({
      id,
      state,
      reason: !reason || reason === 'None' ? null : reason,
      nodes: splitHostList(nodes ?? ''),
      startedAt,
      name: name.join('|'),
    });
  }
  return jobs;
}

/** `gpu[01-04],cpu7` -> [`gpu[01-04]`, `cpu7`]: the host list split at its top-level commas. */
export function splitHostList(list: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let word = '';
  for (const c of list.trim()) {
    if (c === ',' && depth === 0) {
      if (word) out.push(word);
      word = '';
      continue;
    }
    if (c === '[') depth++;
    if (c === ']') depth--;
    word += c;
  }
  if (word && word !== '(null)') out.push(word);
  return out;
}

/** `sacct --parsable2 --noheader --allocations --format=JobID,State,ExitCode` lines. */
export function parseSacct(text: string): Map<string, { state: string; exitCode: number | null }> {
  const out = new Map<string, { state: string; exitCode: number | null }>();
  for (const line of text.split('\n')) {
    const [id, state, exit] = line.trim().split('|');
    if (!id || !state) continue;
    const code = /^(\d+):\d+$/.exec(exit ?? '');
    // `CANCELLED by 0`: the state is the first word.
    out.set(id, { state: state.split(' ')[0], exitCode: code ? Number(code[1]) : null });
  }
  return out;
}

export type Phase = 'pending' | 'running' | 'ended';

/** Slurm's job states, by what they mean for a job of ours. */
export function phaseOf(state: string): Phase {
  switch (state) {
    case 'RUNNING':
    case 'COMPLETING':
    case 'SUSPENDED':
    case 'STOPPED':
    case 'SIGNALING':
    case 'STAGE_OUT':
    case 'RESIZING':
      return 'running';
    case 'COMPLETED':
    case 'FAILED':
    case 'TIMEOUT':
    case 'CANCELLED':
    case 'NODE_FAIL':
    case 'OUT_OF_MEMORY':
    case 'PREEMPTED':
    case 'BOOT_FAIL':
    case 'DEADLINE':
    case 'SPECIAL_EXIT':
    case 'REVOKED':
      return 'ended';
    default:
      // PENDING, CONFIGURING, REQUEUED, REQUEUE_HOLD, RESV_DEL_HOLD, ...
      return 'pending';
  }
}

/** Why a job that has not started waits, in Slurm's words. */
export function pendingReasonOf(job: Pick<QueuedJob, 'state' | 'reason'>): string | null {
  if (job.state === 'PENDING') return job.reason;
  return job.reason ? `${job.state}: ${job.reason}` : job.state;
}

/**
 * How a Slurm job ended, for the runner: the exit status its batch script recorded (null when the
 * script did not get to write it), Slurm's end state (null when unknown: the job left the queue),
 * and whether the worker itself stopped it. The error words name Slurm's state.
 */
export function exitOf(
  state: string | null,
  exitCode: number | null,
  stoppedBy: 'canceled' | 'timeout' | null,
  timeoutSeconds: number,
): JobExit {
  const exit = (more: Partial<JobExit>): JobExit => ({ exitCode, signal: null, reason: null, ...more });
  if (stoppedBy) return exit({ reason: stoppedBy });
  switch (state) {
    case null:
    case 'COMPLETED':
    case 'FAILED':
      if (exitCode !== null) return exit({});
      // The script exits with the program's status: COMPLETED is 0.
      if (state === 'COMPLETED') return exit({ exitCode: 0 });
      return state === null
        ? exit({
            reason: 'lost',
            infrastructure: true,
            detail: 'the cluster no longer knows the job (Slurm)',
          })
        : exit({
            detail:
              'Slurm reports the job FAILED before its program could run (see the node and slurmd logs)',
          });
    case 'TIMEOUT':
      return exit({
        reason: 'timeout',
        detail: `timed out (Slurm's time limit of ${timeLimitMinutes(timeoutSeconds)} min); its processes were stopped`,
      });
    case 'CANCELLED':
      return exit({ detail: 'canceled on the cluster, not through the service (Slurm: CANCELLED)' });
    case 'NODE_FAIL':
      return exit({ infrastructure: true, detail: 'the node running it failed (Slurm: NODE_FAIL)' });
    case 'OUT_OF_MEMORY':
      return exit({ detail: 'it ran out of memory (Slurm: OUT_OF_MEMORY)' });
    case 'PREEMPTED':
      return exit({ infrastructure: true, detail: 'it was preempted by the cluster (Slurm: PREEMPTED)' });
    case 'BOOT_FAIL':
      return exit({ infrastructure: true, detail: 'its node failed to boot (Slurm: BOOT_FAIL)' });
    case 'DEADLINE':
      return exit({ detail: 'it missed its deadline (Slurm: DEADLINE)' });
    default:
      return exit({ detail: `Slurm ended the job (${state})` });
  }
}
