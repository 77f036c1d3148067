import { ownerOf, type Principal } from '../auth/principal';
import { CHANNELS, EventQueue, type EventBus } from '../events/event-bus';
import type { Job } from './job.entity';
import type { LogLine } from './job.log';
import type { JobLogEvent } from './job.runner';
import type { JobEvent, JobService } from './job.service';
import { isTerminal, type JobStatus } from './job.states';

/** A job as a subscriber sees it at one transition: its record, and the state it moved to. */
export interface JobUpdate {
  job: Job;
  status: JobStatus;
}

/**
 * The values of a subscription, each event of `queue` mapped to zero or more of them. Written by
 * hand rather than as an async generator: `return()` (the client unsubscribed) must remove the
 * event listener at once, not after some next event that may never come.
 */
class Feed<E, T> implements AsyncIterableIterator<T> {
  private readonly ready: T[];

  constructor(
    private readonly queue: EventQueue<E>,
    private readonly map: (event: E) => Promise<{ values: T[]; last?: boolean }>,
    first: T[] = [],
    /** Set when nothing more can come (a job that has ended): the feed completes. */
    private ended = false,
  ) {
    this.ready = [...first];
    if (ended) void queue.return();
  }

  async next(): Promise<IteratorResult<T>> {
    for (;;) {
      if (this.ready.length) return { value: this.ready.shift()!, done: false };
      if (this.ended) return this.return();
      const event = await this.queue.next();
      if (event.done) return { value: undefined, done: true };
      const { values, last } = await this.map(event.value);
      this.ready.push(...values);
      if (last) {
        this.ended = true;
        void this.queue.return();
      }
    }
  }

  return(): Promise<IteratorResult<T>> {
    void this.queue.return();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
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
  all(principal: Principal): AsyncIterableIterator<JobUpdate> {
    const owner = ownerOf(principal);
    const queue = this.listen<JobEvent>([
      [
        CHANNELS.jobs,
        (p) =>
          (p as JobEvent).ownerType === owner.type && (p as JobEvent).ownerId === owner.id
            ? (p as JobEvent)
            : null,
      ],
    ]);
    return new Feed(queue, async (e) => ({ values: await this.update(e) }));
  }

  /**
   * One job: its state now, then every later transition, until it ends. A foreign or unknown id
   * is NOT_FOUND.
   */
  async one(principal: Principal, id: string): Promise<AsyncIterableIterator<JobUpdate>> {
    const job = await this.jobs.get(principal, id);
    // Listening before reading the current state, so no transition falls in between.
    const queue = this.listen<JobEvent>([
      [CHANNELS.jobs, (p) => ((p as JobEvent).jobId === job.id ? (p as JobEvent) : null)],
    ]);
    try {
      const [now, seen] = await Promise.all([this.jobs.byId(job.id), this.jobs.lastTransition(job.id)]);
      const current = now ?? job;
      return new Feed(
        queue,
        async (e) => ({
          // What the first state already shows is not shown again.
          values: e.seq > seen ? await this.update(e) : [],
          last: isTerminal(e.status),
        }),
        [{ job: current, status: current.status }],
        isTerminal(current.status),
      );
    } catch (err) {
      void queue.return();
      throw err;
    }
  }

  /** The lines a job prints from now on, until it ends. */
  async logs(principal: Principal, id: string): Promise<AsyncIterableIterator<LogLine>> {
    const job = await this.jobs.get(principal, id);
    type Event = { lines: LogLine[] } | { ended: true };
    const queue = this.listen<Event>([
      [
        CHANNELS.jobLogs,
        (e) => ((e as JobLogEvent).jobId === job.id ? { lines: (e as JobLogEvent).lines } : null),
      ],
      // A job's lines are published before the transition that ends it.
      [
        CHANNELS.jobs,
        (e) =>
          (e as JobEvent).jobId === job.id && isTerminal((e as JobEvent).status) ? { ended: true } : null,
      ],
    ]);
    try {
      const now = await this.jobs.byId(job.id);
      return new Feed(
        queue,
        async (e) => ('lines' in e ? { values: e.lines } : { values: [], last: true }),
        [],
        isTerminal((now ?? job).status),
      );
    } catch (err) {
      void queue.return();
      throw err;
    }
  }

  /** A queue of the events that `pick` keeps, from one or more channels. */
  private listen<E>(picks: [string, (payload: unknown) => E | null][]): EventQueue<E> {
    const offs: (() => void)[] = [];
    const queue = new EventQueue<E>(() => offs.forEach((off) => off()));
    for (const [channel, pick] of picks) {
      offs.push(
        this.bus.on(channel, (payload) => {
          const event = pick(payload);
          if (event !== null) queue.push(event);
        }),
      );
    }
    return queue;
  }

  /**
   * The job as stored when the event is read, showing the state of the event itself: a fast
   * job may be further along already, and every state must still be seen once.
   */
  private async update(e: JobEvent): Promise<JobUpdate[]> {
    const job = await this.jobs.byId(e.jobId);
    return job ? [{ job, status: e.status }] : [];
  }
}
