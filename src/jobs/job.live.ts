import { ownerOf, type Principal } from '../auth/principal';
import { CHANNELS, EventQueue, type EventBus } from '../events/event-bus';
import type { Job } from './job.entity';
import type { LogLine } from './job.log';
import type { JobLogEvent } from './job.runner';
import type { JobEvent, JobService } from './job.service';
import type { JobStatus } from './job.states';

/** A job as a subscriber sees it at one transition: its record, and the state it moved to. */
export interface JobUpdate {
  job: Job;
  status: JobStatus;
}

/**
 * Live job events for GraphQL subscriptions, fed by LISTEN/NOTIFY so that a subscriber on any
 * process sees jobs run by any other. Every feed is scoped to the principal's owner.
 */
export class JobLive {
  constructor(
    private readonly bus: EventBus,
    private readonly jobs: JobService,
  ) {}

  /** Every transition of all the principal's jobs. */
  all(principal: Principal): AsyncIterable<JobUpdate> {
    const owner = ownerOf(principal);
    return this.updates(
      this.queue<JobEvent>(CHANNELS.jobs, (e) => e.ownerType === owner.type && e.ownerId === owner.id),
    );
  }

  /** One job: its state now, then every transition. A foreign or unknown id is NOT_FOUND. */
  async one(principal: Principal, id: string): Promise<AsyncIterable<JobUpdate>> {
    const job = await this.jobs.get(principal, id);
    // Listening before reading the current state, so no transition falls in between.
    const queue = this.queue<JobEvent>(CHANNELS.jobs, (e) => e.jobId === job.id);
    const now = (await this.jobs.byId(job.id)) ?? job;
    return this.updates(queue, { job: now, status: now.status }, (e) => isAfter(e, now));
  }

  /** The lines a job prints from now on. */
  async logs(principal: Principal, id: string): Promise<AsyncIterable<LogLine>> {
    const job = await this.jobs.get(principal, id);
    const queue = this.queue<JobLogEvent>(CHANNELS.jobLogs, (e) => e.jobId === job.id);
    return (async function* () {
      try {
        for await (const event of queue) yield* event.lines;
      } finally {
        await queue.return();
      }
    })();
  }

  private queue<T>(channel: string, wanted: (e: T) => boolean): EventQueue<T> {
    const off = this.bus.on(channel, (payload) => {
      if (wanted(payload as T)) queue.push(payload as T);
    });
    const queue = new EventQueue<T>(off);
    return queue;
  }

  /**
   * The job as stored when the event is read, showing the state of the event itself: a fast
   * job may be further along already, and every state must still be seen once.
   */
  private updates(
    queue: EventQueue<JobEvent>,
    first?: JobUpdate,
    fresh: (e: JobEvent) => boolean = () => true,
  ): AsyncIterable<JobUpdate> {
    const jobs = this.jobs;
    return (async function* () {
      try {
        if (first) yield first;
        for await (const event of queue) {
          if (!fresh(event)) continue;
          const job = await jobs.byId(event.jobId);
          if (job) yield { job, status: event.status };
        }
      } finally {
        await queue.return();
      }
    })();
  }
}

/** Whether an event is news to a subscriber that was given `job` as its first state. */
function isAfter(event: JobEvent, job: Job): boolean {
  const at = new Date(event.at).getTime();
  const seen = job.updatedAt.getTime();
  return at > seen || (at === seen && event.status !== job.status);
}
