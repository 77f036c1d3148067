import type { Logger } from '../common/logger';
import { CHANNELS, type EventBus } from '../events/event-bus';
import { EventHub, type Listener } from '../events/event-hub';
import type { EventScope } from './job.history';
import type { Job } from './job.entity';
import type { LogLine } from './job.log';
import type { JobEvent, JobService } from './job.service';

/** The log-line payload on CHANNELS.jobLogs. */
export interface JobLogEvent {
  jobId: string;
  ownerType: Job['ownerType'];
  ownerId: string;
  lines: LogLine[];
}

/** A batch of a job's lines as published (`seq`: its id in the jobs' event sequence, see JobHistory). */
export type JobLinesEvent = JobLogEvent & { seq?: number };

/** Whose events a consumer listens to: an owner's, one job's, or every job's (a worker's). */
export type JobScope = EventScope | 'every';

const EVERY = '*';
const JOB_PREFIX = 'job:';
const ownerKey = (type: string, id: string) => `${type}:${id}`;
const jobKey = (id: string) => `${JOB_PREFIX}${id}`;
const keyOf = (scope: JobScope) =>
  scope === 'every'
    ? EVERY
    : 'jobId' in scope
      ? jobKey(scope.jobId)
      : ownerKey(scope.owner.type, scope.owner.id);
const keysOf = (e: { jobId: string; ownerType: string; ownerId: string }) => [
  ownerKey(e.ownerType, e.ownerId),
  jobKey(e.jobId),
  EVERY,
];

/** What the hub carries: a transition, or a batch of lines (live only). */
type Heard = ({ transition: JobEvent } | { lines: LinesEvent }) & { seq: number };
type LinesEvent = JobLinesEvent & { seq: number };

/** What a consumer listens to: transitions, lines, or both (in the order of their ids). */
export interface JobListeners {
  transition?: Listener<JobEvent>;
  lines?: Listener<LinesEvent>;
}

/**
 * The job events of this process, for every consumer (GraphQL subscriptions, server-sent event
 * streams, `Prefer: wait`, the worker): one listener on the bus; consumers listen per owner, per
 * job, or to every job. Transitions and log lines come once each, in the order of their ids, and
 * the transitions of a gap in the bus connection are read back from `job_transitions` (one read
 * for all consumers). Log lines of a gap are not: they are in the job's stored output.
 */
export class JobEvents {
  private readonly hub: EventHub<Heard>;

  constructor(bus: EventBus, jobs: JobService, log?: Logger) {
    this.hub = new EventHub<Heard>(
      bus,
      {
        channels: {
          [CHANNELS.jobs]: (p) => ({ transition: p as JobEvent, seq: (p as JobEvent).seq }),
          [CHANNELS.jobLogs]: (p) => {
            const lines = p as JobLinesEvent;
            return lines.seq === undefined ? null : { lines: lines as LinesEvent, seq: lines.seq };
          },
        },
        keysOf: (e) => keysOf('transition' in e ? e.transition : e.lines),
        latest: () => jobs.lastTransitionId(),
        after: async (seq, keys) => {
          const owners: string[] = [];
          const jobIds: string[] = [];
          for (const key of keys)
            if (key.startsWith(JOB_PREFIX)) jobIds.push(key.slice(JOB_PREFIX.length));
            else owners.push(key);
          const of = keys.includes(EVERY) ? null : { owners, jobIds };
          return (await jobs.transitionsAfter(seq, of)).map((t) => ({ transition: t, seq: t.seq }));
        },
      },
      log,
    );
  }

  /** Listeners now (subscriptions, event streams, waiting requests, the worker). */
  listenerCount(): number {
    return this.hub.size;
  }

  /**
   * Every later transition and batch of lines in `scope`, each once, until the returned function
   * is called. `paced`: a consumer that is one of many and sends what it hears (a subscription, an
   * event stream) hears it in slices that leave the event loop its turn (see Listeners), so that
   * the jobs' own steps in this process never wait for a fan-out.
   */
  listen(scope: JobScope, on: JobListeners, { paced = false } = {}): Promise<() => void> {
    return this.hub.subscribe(
      keyOf(scope),
      (e) => {
        if ('transition' in e) on.transition?.(e.transition);
        else on.lines?.(e.lines);
      },
      paced,
    );
  }

  onTransition(
    scope: JobScope,
    listener: Listener<JobEvent>,
    opts?: { paced?: boolean },
  ): Promise<() => void> {
    return this.listen(scope, { transition: listener }, opts);
  }
}
