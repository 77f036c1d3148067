import type { Owner } from '../auth/principal';
import { CHANNELS, type EventBus } from '../events/event-bus';
import type { JobEvent, JobService } from './job.service';
import { isTerminal } from './job.states';

/** The longest a request may wait for a job (`Prefer: wait`). */
export const MAX_WAIT_SECONDS = 60;

/**
 * Waits for jobs to end by listening on the event bus: while it waits it holds no database
 * connection and no worker slot, only a listener in this process.
 */
export class JobWaiter {
  constructor(
    private readonly bus: EventBus,
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
    const offs = [
      this.bus.on(CHANNELS.jobs, (payload) => {
        const e = payload as JobEvent;
        if (e.ownerType !== owner.type || e.ownerId !== owner.id || !isTerminal(e.status)) return;
        ended.add(e.jobId);
        wake?.();
      }),
      // Events of a gap in the connection are lost: look at the job again.
      this.bus.onReconnect(() => wake?.()),
    ];
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
      for (const off of offs) off();
    }
  }
}
