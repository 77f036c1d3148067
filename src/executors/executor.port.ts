/** What an executor is asked to run: argv (never a shell line), where, with what, for how long. */
export interface JobSpec {
  jobId: string;
  argv: string[];
  /** Extra environment; `OUTPUT_DIR` is always set. */
  env: Record<string, string>;
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
  /** Null when the process was killed by a signal. */
  exitCode: number | null;
  signal: string | null;
  /** Set when the executor ended the job itself (timeout, cancel) or lost track of it. */
  reason: 'timeout' | 'canceled' | 'lost' | null;
  /**
   * True when the job failed because of the infrastructure, not the program: the executor lost
   * it, node failure, preemption, boot failure. Such failures are retried automatically
   * (the model's `max_retries`).
   */
  infrastructure?: boolean;
}

export interface RunningJob {
  /** The executor's own handle: a process id, a Slurm job id, a pod name. */
  externalId: string;
  /** Settles when the job has ended and all its output lines were delivered. */
  finished: Promise<JobExit>;
}

/**
 * Runs jobs somewhere: local processes, a Slurm cluster, Kubernetes. Small on purpose; the job
 * runner owns states, events, outputs and retries.
 */
export interface Executor {
  readonly name: string;
  /** Starts the job; `onLine` receives its output line by line. */
  submit(spec: JobSpec, onLine: (stream: LogStream, line: string) => void): Promise<RunningJob>;
  /** Stops a running job (idempotent); its `finished` then settles with reason `canceled`. */
  cancel(externalId: string): Promise<void>;
  /**
   * After a restart: stops a job this executor started under an earlier process, if it still
   * runs; answers whether anything was stopped. Its output cannot be followed any more.
   */
  stopOrphan(jobId: string, externalId: string): Promise<boolean>;
  /** Waits for running jobs to be stopped on shutdown. */
  close(): Promise<void>;
}
