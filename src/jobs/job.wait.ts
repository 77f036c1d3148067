import type { Owner } from '../common/principal';
import type { JobEvents } from './job.events';
import type { JobService } from './job.service';
import { isTerminal } from './job.states';

/** The longest a request may wait for a job (`Prefer: wait`). */
export const MAX_WAIT_SECONDS = 60;

/**
 * Waits for jobs to end by listening to the process's job events: while it waits it holds no
 * database connection and no worker slot, only a listener in this process.
 */
export class JobWaiter {
  constructor(
    private readonly events: JobEvents,
    private readonly jobs: JobService,
  ) {}

  /**
   * Resolves once the job has ended, or, when it failed and was retried automatically, once its
   * last retry has ended; or when `ms` have passed, whichever comes first.
   */
  async untilEnded(owner: Owner, jobId: string, ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    const ended = new Set<string>();
    let wake: (() => void) | null = null;
    // The owner's, not the job's: an automatic retry is another job. An end that fell into a gap
    // of the bus connection is read back by JobEvents.
    const off = await this.events.onTransition({ owner }, (e) => {
      if (!isTerminal(e.status)) return;
      ended.add(e.jobId);
      wake?.();
    });
    try {
      let current: string | null = jobId;
      while (current) {
        // Read after listening, so an end in between is not missed.
        const job = ended.has(current) ? null : await this.jobs.byId(current);
        if (job && !isTerminal(job.status)) {
          const left = deadline - Date.now();
          if (left <= 0) return;
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, left);
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wake = null;
          continue;
        }
        current = await this.jobs.automaticRetryOf(current);
      }
    } finally {
      off();
    }
  }
}
