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
  private accounting: Promise<boolean> | null = null;

  constructor(private readonly opts: SlurmCommandOptions) {}

  run(command: string, args: string[], env: Record<string, string> = {}): Promise<string> {
    return slurmCommand(this.opts, command, args, env);
  }

  /** The jobs squeue shows for `filter`, ended ones it still remembers included. */
  async squeue(filter: string[]): Promise<QueuedJob[]> {
    try {
      return parseSqueue(
        await this.run('squeue', ['--noheader', '--states=all', `--format=${SQUEUE_FORMAT}`, ...filter], {
          SLURM_TIME_FORMAT: '%s',
        }),
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

  /** Whether slurmdbd keeps accounting (sacct knows ended jobs); asked once it answers. */
  hasAccounting(): Promise<boolean> {
    this.accounting ??= this.run('scontrol', ['show', 'config']).then(
      (out) => !/AccountingStorageType\s*=\s*accounting_storage\/none/.test(out),
      (err) => {
        if (err instanceof ExecutorUnavailableError) this.accounting = null; // asked again later
        return false;
      },
    );
    return this.accounting;
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
