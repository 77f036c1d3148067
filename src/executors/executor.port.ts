import type { OwnerType } from '../common/principal';

/** One of the owner's secrets a job gets (docs/secrets.md): in clear, held in memory only. */
export interface JobSecret {
  name: string;
  value: string;
}

/** What an executor is asked to run: argv (never a shell line), where, with what, for how long. */
export type JobPriority = 'low' | 'normal' | 'high';

export interface JobSpec {
  jobId: string;
  /** Whose job it is (a cluster's job carries it, as a Kubernetes label). */
  owner: { type: OwnerType; id: string };
  /** Its deployment's priority (default normal): a cluster orders by it (Slurm QOS or nice, a PriorityClass). */
  priority?: JobPriority;
  argv: string[];
  /** Extra environment; `OUTPUT_DIR` is always set. */
  env: Record<string, string>;
  /**
   * The owner's secrets the model names. The local executor passes them as environment
   * variables; a cluster's executor as 0600 files in the job's directory (`secretFiles`), their
   * paths in `<NAME>_FILE`, so that no value is on a command line or in a manifest.
   */
  secrets?: JobSecret[];
  container: string;
  machineType: string;
  machineCount: number;
  timeoutSeconds: number;
  /** Files the program reads (already substituted into argv); executors may stage them. */
  inputs: string[];
  /** Where the program runs and writes its outputs. */
  workDir: string;
  outputDir: string;
}

export type LogStream = 'stdout' | 'stderr';

export interface JobExit {
  /** Null when the process was killed by a signal, or when the executor cannot know it. */
  exitCode: number | null;
  signal: string | null;
  /** Set when the executor ended the job itself (timeout, cancel) or lost track of it. */
  reason: 'timeout' | 'canceled' | 'lost' | null;
  /**
   * Why it ended, in words, when the exit code does not say it all: a cluster's end state
   * (`the node running it failed (Slurm: NODE_FAIL)`), a resource limit the local executor
   * enforced (`... after reaching its memory limit`). The job's error then.
   */
  detail?: string;
  /**
   * True when the job failed because of the infrastructure, not the program: the executor lost
   * it, its node failed, it was preempted, its node did not boot. Such failures are retried
   * automatically (the model's `max_retries`).
   */
  infrastructure?: boolean;
  /** True when the executor gave the job up before starting it (a shutdown): nothing of it ran. */
  neverRan?: boolean;
}

/**
 * What an executor tells about a job it follows, in order, from one loop per executor (one
 * `squeue` per poll, one watch), never a process per job.
 */
export interface JobObserver {
  /** Waiting for resources; `reason` in the cluster's words (`Resources`, `Priority`), if any. */
  pending(reason: string | null): void;
  /** The program started, on these nodes (host names, or Slurm host lists such as `gpu[01-04]`). */
  running(nodes: string[]): void;
  /**
   * A line the program printed. `earlier` marks lines printed before this process followed the
   * job (a job taken over after a restart): they belong to its log but were shown already.
   */
  line(stream: LogStream, line: string, earlier?: boolean): void;
  /** Once, last: the job ended and every line was delivered. */
  ended(exit: JobExit): void;
  /**
   * Asked by an executor that holds a job back until it has room (the local one): true when the
   * job need not start any more (canceled, or its worker stopping). It then ends at once, as
   * canceled, without having run.
   */
  abandoned?(): boolean;
}

/**
 * Runs jobs somewhere: local processes, a Slurm cluster, Kubernetes. Small on purpose; the job
 * runner owns states, events, outputs and retries.
 *
 * A job is identified by our job id and, once submitted, by the executor's own id (`externalId`:
 * a process id, a Slurm job id, a Kubernetes Job name). An executor whose jobs are `detached`
 * lets any worker process follow a job it did not submit (`adopt`); it also marks every job with
 * our job id (a Slurm job name, a label), so that a job whose submission was never recorded (the
 * worker crashed in between) is found again instead of being submitted twice.
 */
export interface Executor {
  readonly name: string;
  /** Jobs outlive the worker process: another process can adopt them. */
  readonly detached: boolean;
  /**
   * Starts the job and follows it, reporting to `observer`. Answers the external id once the
   * executor has the job (a detached executor: once it is queued, maybe before it runs).
   * Throws `ExecutorUnavailableError` when the cluster cannot be reached; the caller tries again
   * later with `retry` true, and the executor then first looks for the job an earlier attempt may
   * have submitted after all (its answer lost), so that a job is submitted once.
   */
  submit(spec: JobSpec, observer: JobObserver, retry?: boolean): Promise<string>;
  /**
   * Optional: submits several jobs at once (a batch's chunk; a Slurm job array), each followed by
   * its observer as `submit` follows one. Answers the external ids in the order of `specs`.
   * Without it, a batch's jobs are submitted one by one (docs/batches.md, "Executors").
   */
  submitMany?(
    specs: readonly JobSpec[],
    observers: readonly JobObserver[],
    retry?: boolean,
  ): Promise<string[]>;
  /**
   * Follows a job submitted earlier, by this or another process, from where it is now: its
   * state, its log (lines printed so far come `earlier`), its end. Without `externalId` the job
   * is found by the job id it carries. Answers its external id, or null when the executor does
   * not know the job (then `observer.ended` reports it lost). Executors whose jobs are not
   * `detached` cannot do this.
   */
  adopt(spec: JobSpec, externalId: string | null, observer: JobObserver): Promise<string | null>;
  /**
   * Stops a job (idempotent); a followed job then ends with reason `canceled` (or `timeout`).
   * Throws `ExecutorUnavailableError` when the cluster cannot be reached (the caller tries again).
   */
  cancel(externalId: string): Promise<void>;
  /**
   * After a restart: stops a job this executor started under an earlier process, if it still
   * runs; answers whether anything was stopped. Its output cannot be followed any more. (Jobs of
   * a detached executor are adopted instead.) `externalId` is null when the job was started but
   * its id not recorded (the worker died meanwhile): the executor finds it by the job's id.
   */
  stopOrphan(jobId: string, externalId: string | null): Promise<boolean>;
  /**
   * On shutdown. A local executor stops its jobs (they end with reason `canceled`); a detached
   * one stops following them and leaves them running for another worker to adopt.
   */
  close(): Promise<void>;
}

/**
 * The cluster cannot be reached or is too busy to answer (a Slurm controller that is down or
 * restarting, a Kubernetes API answering 5xx or refusing connections): nothing is known of the
 * request, which is worth trying again later. Any other error of an executor is final.
 */
export class ExecutorUnavailableError extends Error {
  override readonly name = 'ExecutorUnavailableError';
}
