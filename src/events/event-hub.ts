import type { Logger } from '../common/logger';
import { pause } from '../common/time';
import type { EventBus } from './event-bus';

export type Listener<E> = (event: E) => void;

/** How many paced listeners are called before the event loop gets its turn (see Listeners). */
const PACED_SLICE = 16;

/**
 * A round of many paced listeners gathers events before it starts: `fromListeners` or more
 * waiting, it starts `msPerListener` ms per listener later (a pass takes about 15 µs per listener
 * here, so this is about a third of what the pass itself will take), at most `maxMs`.
 */
export interface Gathering {
  fromListeners: number;
  msPerListener: number;
  maxMs: number;
}

const GATHERING: Gathering = { fromListeners: 256, msPerListener: 0.005, maxMs: 25 };

interface Entry<E> {
  listener: Listener<E>;
  paced: boolean;
  live: boolean;
  /** Paced: the events emitted for it and not handed out yet, in order (null: none, not in the round). */
  pending: E[] | null;
}

/**
 * Listeners by key (a filter such as an owner or one job): an event reaches only the listeners of
 * its keys. A listener is called at once, or, when `paced` (many of them, each sending something:
 * subscriptions, event streams), in slices of PACED_SLICE listeners with the event loop's turn
 * between them, so that what else the process does (a job's own steps) never waits for a whole
 * fan-out.
 *
 * Paced listeners wait in one round, each once: a listener not reached yet when more events come
 * is handed all of its pending events in one turn, one call each, in the order they were emitted,
 * so that a job's quick events (queued, starting, running, succeeded) reach the last listener
 * after about one pass over them all, not one pass per event. One already reached joins the end
 * of the round again. Each listener still gets every event once and in order.
 *
 * A round of many (see Gathering) starts a few ms late: the events that come meanwhile (the rest
 * of a quick job's) go out with the first, one write per subscriber where there would be two or
 * more, and the job's own steps meanwhile do not share the machine with a fan-out. The first
 * listener hears a little later, the last one sooner.
 */
export class Listeners<E> {
  private readonly byKey = new Map<string, Set<Entry<E>>>();
  private count = 0;
  /** The paced listeners with pending events, in the order they are served; `head` is the next. */
  private round: Entry<E>[] = [];
  private head = 0;
  private pacing = false;

  constructor(
    private readonly log?: Logger,
    private readonly gathering: Gathering = GATHERING,
  ) {}

  /** Listens under `key` until the returned function is called (more calls do nothing). */
  add(key: string, listener: Listener<E>, paced = false): () => void {
    let set = this.byKey.get(key);
    if (!set) this.byKey.set(key, (set = new Set()));
    // An entry of its own, so that the same function may listen twice and each stop removes its own.
    const own: Entry<E> = { listener, paced, live: true, pending: null };
    set.add(own);
    this.count++;
    return () => {
      if (!set.delete(own)) return;
      own.live = false; // its pending events are dropped
      own.pending = null;
      this.count--;
      if (!set.size && this.byKey.get(key) === set) this.byKey.delete(key);
    };
  }

  emit(keys: readonly string[], event: E): void {
    let later = false;
    for (const key of keys) {
      const set = this.byKey.get(key);
      if (!set) continue;
      for (const entry of set)
        if (!entry.paced) this.call(entry, event, key);
        else if (entry.pending) entry.pending.push(event);
        else {
          entry.pending = [event];
          this.round.push(entry);
          later = true;
        }
    }
    if (later && !this.pacing) {
      this.pacing = true;
      const waiting = this.round.length - this.head;
      const { fromListeners, msPerListener, maxMs } = this.gathering;
      if (waiting < fromListeners) setImmediate(() => this.pace());
      else setTimeout(() => this.pace(), Math.min(waiting * msPerListener, maxMs));
    }
  }

  /** One slice of the round (each listener with all its pending events), then the event loop's turn. */
  private pace(): void {
    const round = this.round;
    for (let budget = PACED_SLICE; budget > 0 && this.head < round.length;) {
      const entry = round[this.head];
      round[this.head++] = undefined as unknown as Entry<E>; // not kept alive by the round
      const events = entry.pending;
      entry.pending = null;
      if (!events || !entry.live) continue;
      budget--;
      for (const event of events) this.call(entry, event);
    }
    if (this.head === round.length) {
      this.round = [];
      this.head = 0;
      this.pacing = false;
      return;
    }
    // A round that never empties (events all the time) drops the part already served now and then.
    if (this.head > 4096 && this.head * 2 > round.length) {
      this.round = round.slice(this.head);
      this.head = 0;
    }
    setImmediate(() => this.pace());
  }

  private call(entry: Entry<E>, event: E, key?: string): void {
    try {
      entry.listener(event);
    } catch (err) {
      this.log?.error({ err, key }, 'event listener failed');
    }
  }

  /** The keys someone listens under now. */
  keys(): string[] {
    return [...this.byKey.keys()];
  }

  get size(): number {
    return this.count;
  }
}

/**
 * A hub's events: the bus channels they come on, and where they are recorded, so that those of a
 * gap in the bus connection can be read back. All of them share one `seq` sequence; a channel
 * may carry events that are not recorded (they are live only, yet kept in order with the rest).
 */
export interface EventSource<E> {
  /** Each channel, with how its payload becomes an event (null: not one to deliver). */
  channels: Record<string, (payload: unknown) => E | null>;
  /** The keys an event is delivered under. */
  keysOf(event: E): readonly string[];
  /** The latest recorded event's seq now. */
  latest(): Promise<number>;
  /** The recorded events after `seq` under any of `keys`. */
  after(seq: number, keys: readonly string[]): Promise<E[]>;
}

/** Seqs of events heard, remembered so that an event read back after a gap is not delivered twice. */
const HEARD_MEMORY = 10_000;
/** After a gap, events this far below the latest heard are looked at again (commit order is not seq order). */
const RESYNC_LOOKBACK = 1_000;

/**
 * The one listener of a process for a kind of events (each with an increasing `seq`), fanning
 * each event out to the listeners of its keys, once each. After the bus reconnects, the recorded
 * events of the gap are read back in one read for every key listened under, and delivered in
 * order with those heard meanwhile; nobody listens on the bus itself, so nobody is left stale.
 */
export class EventHub<E extends { seq: number }> {
  private readonly listeners: Listeners<E>;
  private readonly heard = new Set<number>();
  private readonly heardOrder: number[] = [];
  private highest = 0;
  private baseline: Promise<number> | null = null;
  /** Events heard while the gap is read back: delivered after it, in order. */
  private held: E[] | null = null;
  private resyncs = 0;

  constructor(
    bus: EventBus,
    private readonly source: EventSource<E>,
    private readonly log?: Logger,
  ) {
    this.listeners = new Listeners(log);
    for (const [channel, eventOf] of Object.entries(source.channels))
      bus.on(channel, (payload) => {
        const e = eventOf(payload);
        if (e) this.hear(e);
      });
    bus.onReconnect(() => void this.resync());
  }

  /**
   * Calls `listener` with every later event under `key`, until the returned function is called;
   * `paced`: in slices, for a consumer that is one of many (see Listeners).
   * Resolves once listening (the first call reads where a read-back after a gap starts at most).
   */
  async subscribe(key: string, listener: Listener<E>, paced = false): Promise<() => void> {
    await this.knowBaseline();
    return this.listeners.add(key, listener, paced);
  }

  /** Listeners now. */
  get size(): number {
    return this.listeners.size;
  }

  /** The latest event when this process began to listen: where a read-back after a gap starts at most. */
  private async knowBaseline(): Promise<void> {
    this.baseline ??= this.source.latest().catch((err) => {
      this.baseline = null;
      throw err;
    });
    this.highest = Math.max(this.highest, await this.baseline);
  }

  private hear(e: E): void {
    if (this.held) this.held.push(e);
    else this.deliver(e);
  }

  private deliver(e: E): void {
    if (this.heard.has(e.seq)) return;
    this.heard.add(e.seq);
    this.heardOrder.push(e.seq);
    if (this.heardOrder.length > HEARD_MEMORY) this.heard.delete(this.heardOrder.shift()!);
    this.highest = Math.max(this.highest, e.seq);
    this.listeners.emit(this.source.keysOf(e), e);
  }

  /**
   * After the bus reconnected: the events of every key listened under since the latest heard
   * (and a margin below it) are read back and delivered in order with what is heard meanwhile;
   * those already heard are skipped. Retried until it succeeds or another gap began.
   */
  private async resync(): Promise<void> {
    const generation = ++this.resyncs;
    const held = (this.held ??= []);
    try {
      for (let wait = 200; generation === this.resyncs; wait = Math.min(wait * 2, 5000)) {
        const keys = this.listeners.keys();
        if (!keys.length) return;
        try {
          const base = this.baseline ? await this.baseline.catch(() => 0) : 0;
          held.push(...(await this.source.after(Math.max(base, this.highest - RESYNC_LOOKBACK), keys)));
          return;
        } catch (err) {
          this.log?.warn({ err, retryInMs: wait }, 'cannot read the events of a gap yet');
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
}
