import { ExecutorUnavailableError } from '../executors/executor.port';

const FIRST_WAIT_MS = 1000;
const MAX_WAIT_MS = 15_000;

/**
 * Tries an executor's request again, with backoff (1 s doubling to 15 s), while the cluster
 * cannot be reached (`ExecutorUnavailableError`), for up to `seconds` (CLUSTER_RETRY_SECONDS);
 * then fails with the last error. Any other error fails at once.
 */
export class UnavailableRetry {
  private wakeUp: (() => void) | null = null;

  constructor(private readonly seconds: number) {}

  /** Cuts the current wait short: the caller's situation changed (canceled, shutting down). */
  wake(): void {
    this.wakeUp?.();
  }

  /**
   * Runs `step` (`retry`: an earlier attempt failed) until it answers; `waiting` is told of each
   * failed attempt. Answers null once `given up` says so after a wait.
   */
  async run<T>(
    step: (retry: boolean) => Promise<T>,
    waiting: (err: ExecutorUnavailableError, waitMs: number) => void,
    givenUp: () => boolean,
  ): Promise<T | null> {
    const deadline = Date.now() + this.seconds * 1000;
    for (let retry = false, wait = FIRST_WAIT_MS; ; retry = true, wait = Math.min(wait * 2, MAX_WAIT_MS)) {
      try {
        return await step(retry);
      } catch (err) {
        if (!(err instanceof ExecutorUnavailableError)) throw err;
        if (Date.now() >= deadline)
          throw new ExecutorUnavailableError(`${err.message} (no answer for ${this.seconds} s)`);
        const ms = Math.min(wait, deadline - Date.now());
        waiting(err, ms);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, ms);
          this.wakeUp = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wakeUp = null;
        if (givenUp()) return null;
      }
    }
  }
}
