import { execFile } from 'node:child_process';
import { ExecutorUnavailableError } from './executor.port';
import { parseSacct, parseSqueue, SQUEUE_FORMAT, type QueuedJob } from './slurm.sbatch';

/** A Slurm command that has not answered by then is given up (its controller is unresponsive). */
const COMMAND_TIMEOUT_MS = 60_000;

/**
 * What Slurm's commands print when the controller cannot be reached or is too busy to answer
 * (down, restarting, overloaded): nothing was decided, and the request is worth trying again.
 */
const CONTROLLER_UNAVAILABLE =
  /Unable to contact slurm controller|Socket timed out on send\/recv|temporarily unable to accept job|Resource temporarily unavailable|Zero Bytes were transmitted or received|Connection refused|Communication connection failure/i;

export interface SlurmCommandOptions {
  /** PATH for the commands (and the jobs sbatch starts). */
  path: string;
  /** Slurm's SLURM_CONF, when not the default. */
  slurmConf: string | undefined;
}

/**
 * Runs a Slurm command with a minimal environment; answers its stdout. Fails with an
 * `ExecutorUnavailableError` when the controller cannot be reached or did not answer in time.
 */
export function slurmCommand(
  opts: SlurmCommandOptions,
  command: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      {
        env: { PATH: opts.path, ...(opts.slurmConf ? { SLURM_CONF: opts.slurmConf } : {}), ...env },
        maxBuffer: 256 * 1024 * 1024,
        timeout: COMMAND_TIMEOUT_MS,
      },
      (err, stdout, stderr) => {
        if (!err) return resolve(stdout);
        const said = stderr.trim();
        if (err.killed && !said)
          return reject(
            new ExecutorUnavailableError(`${command}: no answer within ${COMMAND_TIMEOUT_MS / 1000} s`),
          );
        const message = `${command}: ${said || err.message}`;
        reject(
          CONTROLLER_UNAVAILABLE.test(said) ? new ExecutorUnavailableError(message) : new Error(message),
        );
      },
    );
  });
}

/** The questions the worker asks Slurm's commands, in the worker's terms. */
export class SlurmCommands {
  private config: Promise<string> | null = null;

  constructor(private readonly opts: SlurmCommandOptions) {}

  run(command: string, args: string[], env: Record<string, string> = {}): Promise<string> {
    return slurmCommand(this.opts, command, args, env);
  }

  /**
   * The jobs squeue shows for `filter`, ended ones it still remembers included; array tasks one
   * per line (`--array`), each with its own id (`123_5`).
   */
  async squeue(filter: string[]): Promise<QueuedJob[]> {
    try {
      return parseSqueue(
        await this.run(
          'squeue',
          ['--noheader', '--array', '--states=all', `--format=${SQUEUE_FORMAT}`, ...filter],
          { SLURM_TIME_FORMAT: '%s' },
        ),
      );
    } catch (err) {
      // Asked about one job it has forgotten, squeue fails instead of answering nothing.
      if (/Invalid job id specified/.test((err as Error).message)) return [];
      throw err;
    }
  }

  /** What accounting knows of ended jobs (nothing when sacct fails). */
  async sacct(ids: string[]): Promise<ReturnType<typeof parseSacct>> {
    const args = ['--noheader', '--parsable2', '--allocations', '--format=JobID,State,ExitCode'];
    return parseSacct(await this.run('sacct', [...args, `--jobs=${ids.join(',')}`]).catch(() => ''));
  }

  /** `scontrol show config`, asked once it answers (a controller that is down is asked again). */
  private showConfig(): Promise<string> {
    this.config ??= this.run('scontrol', ['show', 'config']).catch((err) => {
      this.config = null;
      throw err;
    });
    return this.config;
  }

  /** Whether slurmdbd keeps accounting (sacct knows ended jobs). */
  hasAccounting(): Promise<boolean> {
    return this.showConfig().then(
      (out) => !/AccountingStorageType\s*=\s*accounting_storage\/none/.test(out),
      () => false,
    );
  }

  /**
   * The cluster's MaxArraySize: task ids of an array are below it (Slurm's default is 1001).
   * Fails with ExecutorUnavailableError while the controller cannot be reached.
   */
  async maxArraySize(): Promise<number> {
    const m = /^MaxArraySize\s*=\s*(\d+)/m.exec(await this.showConfig());
    return m ? Number(m[1]) : 1001;
  }
}

/** Runs `task`s, at most `limit` at once. */
export class Limiter {
  private active = 0;
  private readonly queue: (() => void)[] = [];
  peak = 0;

  constructor(private readonly limit: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.queue.push(resolve));
    else this.active++;
    this.peak = Math.max(this.peak, this.active);
    try {
      return await task();
    } finally {
      const next = this.queue.shift();
      if (next) next();
      else this.active--;
    }
  }
}
