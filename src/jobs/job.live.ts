import { ownerOf, type Principal } from '../auth/principal';
import { isDatabaseUnavailable } from '../common/errors';
import type { Logger } from '../common/logger';
import { pause } from '../common/time';
import { CHANNELS, EventQueue, type EventBus } from '../events/event-bus';
import type { Job } from './job.entity';
import type { LogLine } from './job.log';
import type { JobLogEvent } from './job.runner';
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

/** A `jobs` or `jobUpdated(id)` subscription, registered under its owner's or its job's key. */
interface Watcher {
  needs: JobNeeds;
  queue: EventQueue<Delivery>;
}

/** Seqs of events heard, remembered so that an event re-read after a gap is not delivered twice. */
const HEARD_MEMORY = 10_000;
/** After a gap, transitions this far below the latest heard are looked at again (commit order of different jobs' transitions is not id order). */
const RESYNC_LOOKBACK = 1_000;
const READ_ATTEMPTS = 5;

const ownerKey = (type: string, id: string) => `${type}:${id}`;
const jobKey = (id: string) => `job:${id}`;

/**
 * The values of a subscription, each item of `queue` mapped to zero or more of them. Written by
 * hand rather than as an async generator: `return()` (the client unsubscribed) must remove the
 * listener at once, not after some next event that may never come.
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
 *
 * One listener per process fans each event out to the subscriptions that may see it (by owner,
 * or by job). A subscription whose fields are all in the event's payload is answered from it;
 * the others share one read of the job per event. After the event bus reconnects, the
 * transitions of the gap are read back and delivered in order, so nobody is left stale.
 */
export class JobLive {
  private readonly watchers = new Map<string, Set<Watcher>>();
  private watcherCount = 0;
  private logFeeds = 0;
  private readonly heard = new Set<number>();
  private readonly heardOrder: number[] = [];
  private highest = 0;
  private baseline: Promise<number> | null = null;
  /** Events heard while the gap is read back: delivered after it, in order. */
  private held: JobEvent[] | null = null;
  private resyncs = 0;

  constructor(
    private readonly bus: EventBus,
    private readonly jobs: JobService,
    private readonly log?: Logger,
  ) {
    bus.on(CHANNELS.jobs, (payload) => this.hear(payload as JobEvent));
    bus.onReconnect(() => void this.resync());
  }

  /** Subscriptions open now (a health figure; ended ones must not count). */
  subscriberCount(): number {
    return this.watcherCount + this.logFeeds;
  }

  /** Every transition of all the principal's jobs. */
  async all(principal: Principal, needs: JobNeeds = null): Promise<AsyncIterableIterator<JobUpdate>> {
    await this.knowBaseline();
    const owner = ownerOf(principal);
    const watcher = this.watch(ownerKey(owner.type, owner.id), needs);
    return new Feed(watcher.queue, async (d) => {
      const update = await d.update;
      return { values: update ? [update] : [] };
    });
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
    await this.knowBaseline();
    // Registered before the state is read, so no transition falls in between; what the state
    // already shows (by its transition's id, read in the same statement) is not shown again.
    const watcher = this.watch(jobKey(job.id), needs);
    try {
      const now = await this.jobs.withLastTransition(job.id);
      const current = now?.job ?? job;
      const seen = now?.seq ?? 0;
      return new Feed(
        watcher.queue,
        async (d) => {
          if (d.seq <= seen) return { values: [] };
          const update = await d.update;
          return { values: update ? [update] : [], last: isTerminal(d.status) };
        },
        [{ job: current, status: current.status }],
        isTerminal(current.status),
      );
    } catch (err) {
      void watcher.queue.return();
      throw err;
    }
  }

  /** The lines a job prints from now on, until it ends. */
  async logs(principal: Principal, id: string): Promise<AsyncIterableIterator<LogLine>> {
    const job = await this.jobs.get(principal, id);
    type Event = { lines: LogLine[] } | { ended: true };
    const endIfEnded = async () => {
      const now = await this.jobs.byId(job.id);
      if (now && isTerminal(now.status)) queue.push({ ended: true });
    };
    const offs = [
      this.bus.on(CHANNELS.jobLogs, (e) => {
        if ((e as JobLogEvent).jobId === job.id) queue.push({ lines: (e as JobLogEvent).lines });
      }),
      // A job's lines are published before the transition that ends it.
      this.bus.on(CHANNELS.jobs, (e) => {
        if ((e as JobEvent).jobId === job.id && isTerminal((e as JobEvent).status))
          queue.push({ ended: true });
      }),
      // Its end may have fallen into a gap of the connection (its lines of the gap are in logTail).
      this.bus.onReconnect(() => void endIfEnded().catch(() => undefined)),
    ];
    this.logFeeds++;
    const queue = new EventQueue<Event>(() => {
      offs.forEach((off) => off());
      this.logFeeds--;
    });
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

  private watch(key: string, needs: JobNeeds): Watcher {
    let set = this.watchers.get(key);
    if (!set) this.watchers.set(key, (set = new Set()));
    const watcher: Watcher = {
      needs,
      queue: new EventQueue<Delivery>(() => {
        if (set.delete(watcher)) this.watcherCount--;
        if (!set.size && this.watchers.get(key) === set) this.watchers.delete(key);
      }),
    };
    set.add(watcher);
    this.watcherCount++;
    return watcher;
  }

  /** The latest transition when this process began to watch: where a read-back after a gap starts at most. */
  private async knowBaseline(): Promise<void> {
    this.baseline ??= this.jobs.lastTransitionId().catch((err) => {
      this.baseline = null;
      throw err;
    });
    this.highest = Math.max(this.highest, await this.baseline);
  }

  private hear(e: JobEvent): void {
    if (this.held) this.held.push(e);
    else this.deliver(e);
  }

  private deliver(e: JobEvent): void {
    if (this.heard.has(e.seq)) return;
    this.heard.add(e.seq);
    this.heardOrder.push(e.seq);
    if (this.heardOrder.length > HEARD_MEMORY) this.heard.delete(this.heardOrder.shift()!);
    this.highest = Math.max(this.highest, e.seq);
    const byOwner = this.watchers.get(ownerKey(e.ownerType, e.ownerId));
    const byJob = this.watchers.get(jobKey(e.jobId));
    if (!byOwner && !byJob) return;
    const fromPayload = e.job ? jobOf(e.job) : null;
    let read: Promise<JobUpdate | null> | undefined;
    for (const watcher of [...(byOwner ?? []), ...(byJob ?? [])]) {
      const update =
        fromPayload && covers(e.job!, watcher.needs)
          ? { job: fromPayload, status: e.status }
          : (read ??= this.read(e));
      watcher.queue.push({ seq: e.seq, status: e.status, update });
    }
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

  /**
   * After the bus reconnected: the transitions of the watched owners and jobs since the latest
   * event heard (and a margin below it) are read back and delivered in order with what is heard
   * meanwhile; those already heard are skipped. Retried until it succeeds or another gap began.
   */
  private async resync(): Promise<void> {
    const generation = ++this.resyncs;
    const held = (this.held ??= []);
    try {
      for (let wait = 200; generation === this.resyncs; wait = Math.min(wait * 2, 5000)) {
        const owners: string[] = [];
        const jobIds: string[] = [];
        for (const key of this.watchers.keys())
          if (key.startsWith('job:')) jobIds.push(key.slice(4));
          else owners.push(key);
        if (!owners.length && !jobIds.length) return;
        try {
          const after = Math.max(await this.baselineOrZero(), this.highest - RESYNC_LOOKBACK);
          held.push(...(await this.jobs.transitionsAfter(after, owners, jobIds)));
          return;
        } catch (err) {
          this.log?.warn({ err, retryInMs: wait }, 'cannot read the job events of a gap yet');
          await pause(wait);
        }
      }
    } finally {
      if (generation === this.resyncs) {
        this.held = null;
        held.sort((a, b) => a.seq - b.seq);
        for (const e of held) this.deliver(e);
      }
    }
  }

  private async baselineOrZero(): Promise<number> {
    return this.baseline ? this.baseline.catch(() => 0) : 0;
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
