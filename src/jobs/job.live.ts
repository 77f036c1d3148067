import { ownerOf, type Principal } from '../common/principal';
import { isDatabaseUnavailable } from '../common/errors';
import { pause } from '../common/time';
import { EventQueue, type FeedSink, type Pushable } from '../events/event-bus';
import type { Job } from './job.entity';
import type { JobEvents } from './job.events';
import type { EventScope } from './job.history';
import type { LogLine } from './job.log';
import type { JobEvent, JobService, JobSnapshot } from './job.service';
import { isTerminal, type JobStatus } from './job.states';

/** A job as a subscriber sees it at one transition: its record, and the state it moved to. */
export interface JobUpdate {
  job: Job;
  status: JobStatus;
}

/**
 * What a subscriber's fields are made of: keys of the event payload's job (JobSnapshot), or null
 * when they cannot be told (the job is then read for every event).
 */
export type JobNeeds = ReadonlySet<string> | null;

/** One event for one subscriber: its state, and the update (answered at once or being read). */
interface Delivery {
  seq: number;
  status: JobStatus;
  update: JobUpdate | Promise<JobUpdate | null>;
}

/**
 * What every subscription that reads an event shares: the update from its payload, and one read
 * of the job. The same objects for all, so that one execution of a selection serves them all
 * (the websocket server's shared executions are keyed by them).
 */
interface Shared {
  fromPayload: JobUpdate | null;
  read?: Promise<JobUpdate | null>;
}

const READ_ATTEMPTS = 5;

/** What an item of a feed's queue is mapped to: its values, and whether nothing more can come. */
interface Mapped<T> {
  values: T[];
  last?: boolean;
}

/**
 * The values of a subscription, each item of `queue` mapped to zero or more of them. Written by
 * hand rather than as an async generator: `return()` (the client unsubscribed) must remove the
 * listener at once, not after some next event that may never come.
 *
 * Pulled (next()), or pushed (pushTo: the websocket server's shared executions): then an item
 * whose values are at hand (most are: see JobLive) is handed on in the hub's call itself, and one
 * that waits for a read holds the later ones back until it is done, so the order stays.
 */
class Feed<E, T> implements Pushable<T> {
  private readonly ready: T[];
  private sink: FeedSink<T> | null = null;
  /** Pushed: the values being made (a job read); the items that came later wait for it. */
  private making: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly queue: EventQueue<E>,
    private readonly map: (event: E) => Mapped<T> | Promise<Mapped<T>>,
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

  pushTo(sink: FeedSink<T>): void {
    this.sink = sink;
    for (const value of this.ready.splice(0)) sink.next(value);
    if (this.ended) return this.close();
    this.queue.forward((event) => this.take(event));
  }

  return(): Promise<IteratorResult<T>> {
    void this.queue.return();
    if (this.sink) this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** Pushed: one item of the queue. */
  private take(event: E): void {
    if (this.making) return this.after(this.making.then(() => this.map(event)));
    let mapped: Mapped<T> | Promise<Mapped<T>>;
    try {
      mapped = this.map(event);
    } catch (err) {
      return this.close(err);
    }
    if (mapped instanceof Promise) this.after(mapped);
    else this.hand(mapped);
  }

  private after(mapped: Promise<Mapped<T>>): void {
    const making: Promise<void> = mapped
      .then(
        (m) => this.hand(m),
        (err) => this.close(err),
      )
      .then(() => {
        if (this.making === making) this.making = null;
      });
    this.making = making;
  }

  private hand({ values, last }: Mapped<T>): void {
    if (this.closed) return;
    for (const value of values) this.sink!.next(value);
    if (last) this.close();
  }

  private close(err?: unknown): void {
    if (this.closed) return;
    this.closed = true;
    void this.queue.return();
    this.sink!.end(err);
  }
}

/** The values of an update (at hand, or being read). */
function mapped(update: Delivery['update'], last?: boolean): Mapped<JobUpdate> | Promise<Mapped<JobUpdate>> {
  return update instanceof Promise
    ? update.then((u) => ({ values: u ? [u] : [], last }))
    : { values: [update], last };
}

/**
 * Live job events for GraphQL subscriptions, from the process's JobEvents (so that a subscriber on
 * any process sees jobs run by any other, and those of a gap in the bus connection too). Every
 * feed is scoped to the principal's owner.
 *
 * A subscription whose fields are all in the event's payload is answered from it; the others
 * share one read of the job per event.
 */
export class JobLive {
  private watcherCount = 0;
  private logFeeds = 0;
  /**
   * What the subscriptions of an event share, by the event (the same object for all of them): the
   * hub may hand several events to one subscription before the next one hears the first.
   */
  private readonly shared = new WeakMap<JobEvent, Shared>();

  constructor(
    private readonly events: JobEvents,
    private readonly jobs: JobService,
  ) {}

  /** Subscriptions open now (a health figure; ended ones must not count). */
  subscriberCount(): number {
    return this.watcherCount + this.logFeeds;
  }

  /** Every transition of all the principal's jobs. */
  async all(principal: Principal, needs: JobNeeds = null): Promise<AsyncIterableIterator<JobUpdate>> {
    const queue = await this.watch({ owner: ownerOf(principal) }, needs);
    return new Feed(queue, (d) => mapped(d.update));
  }

  /**
   * One job: its state now, then every later transition, each once and in order, until it ends.
   * A foreign or unknown id is NOT_FOUND.
   */
  async one(
    principal: Principal,
    id: string,
    needs: JobNeeds = null,
  ): Promise<AsyncIterableIterator<JobUpdate>> {
    const job = await this.jobs.get(principal, id);
    // Registered before the state is read, so no transition falls in between; what the state
    // already shows (by its transition's id, read in the same statement) is not shown again.
    const queue = await this.watch({ jobId: job.id }, needs);
    try {
      const now = await this.jobs.withLastTransition(job.id);
      const current = now?.job ?? job;
      const seen = now?.seq ?? 0;
      return new Feed(
        queue,
        (d) => (d.seq <= seen ? { values: [] } : mapped(d.update, isTerminal(d.status))),
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
    let off: (() => void) | undefined;
    this.logFeeds++;
    const queue = new EventQueue<Event>(() => {
      off?.();
      this.logFeeds--;
    });
    try {
      // A job's lines are published before the transition that ends it (one in a gap is read back).
      off = await this.events.listen(
        { jobId: job.id },
        {
          lines: (e) => queue.push({ lines: e.lines }),
          transition: (e) => {
            if (isTerminal(e.status)) queue.push({ ended: true });
          },
        },
        { paced: true },
      );
      const now = await this.jobs.byId(job.id);
      return new Feed(
        queue,
        (e) => ('lines' in e ? { values: e.lines } : { values: [], last: true }),
        [],
        isTerminal((now ?? job).status),
      );
    } catch (err) {
      void queue.return();
      throw err;
    }
  }

  /** A queue of the transitions in `scope`, listening until it is closed. */
  private async watch(scope: EventScope, needs: JobNeeds): Promise<EventQueue<Delivery>> {
    let off: (() => void) | undefined;
    this.watcherCount++;
    const queue = new EventQueue<Delivery>(() => {
      off?.();
      this.watcherCount--;
    });
    try {
      off = await this.events.onTransition(scope, (e) => queue.push(this.delivery(e, needs)), {
        paced: true,
      });
    } catch (err) {
      void queue.return();
      throw err;
    }
    return queue;
  }

  private delivery(e: JobEvent, needs: JobNeeds): Delivery {
    let shared = this.shared.get(e);
    if (!shared)
      this.shared.set(e, (shared = { fromPayload: e.job ? { job: jobOf(e.job), status: e.status } : null }));
    const update =
      shared.fromPayload && covers(e.job!, needs) ? shared.fromPayload : (shared.read ??= this.read(e));
    return { seq: e.seq, status: e.status, update };
  }

  /**
   * The job as stored when the event is read, showing the state of the event itself (a fast job
   * may be further along already, and every state must still be seen once). Read once for all
   * the subscriptions that need it; a database that is briefly away is waited for.
   */
  private read(e: JobEvent): Promise<JobUpdate | null> {
    const attempt = async (): Promise<JobUpdate | null> => {
      for (let i = 1, wait = 200; ; i++, wait *= 2) {
        try {
          const job = await this.jobs.byId(e.jobId);
          return job ? { job, status: e.status } : null;
        } catch (err) {
          if (i >= READ_ATTEMPTS || !isDatabaseUnavailable(err)) throw err;
          await pause(wait);
        }
      }
    };
    const read = attempt();
    // Subscribers that end meanwhile never look at it: a failure must not count as unhandled.
    read.catch(() => undefined);
    return read;
  }
}

/** Whether an event's payload holds every property the subscriber's fields are made of. */
function covers(snapshot: JobSnapshot, needs: JobNeeds): boolean {
  if (!needs) return false;
  for (const property of needs) if (!(property in snapshot)) return false;
  return true;
}

const DATES = ['createdAt', 'startedAt', 'finishedAt', 'updatedAt'] as const;

/** The job an event's payload describes, with the properties it carries (JobType.from reads them). */
function jobOf(snapshot: JobSnapshot): Job {
  const { deploymentId, ...rest } = snapshot;
  const job: Record<string, unknown> = { ...rest, deployment: { id: deploymentId } };
  for (const key of DATES) if (typeof job[key] === 'string') job[key] = new Date(job[key] as string);
  return job as unknown as Job;
}

declare module '../graphql/graphql.context' {
  interface RequestContext {
    /** Live job events for subscriptions (one feed per process). */
    live: JobLive;
  }
}
