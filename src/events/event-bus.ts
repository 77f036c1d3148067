import { Client, type Notification } from 'pg';
import type { Logger } from '../common/logger';
import { boundedConnection, boundQueries } from '../db/pg-bounds';

export type Handler = (payload: unknown) => void;

/** Channels of the service; payloads are JSON, well under PostgreSQL's 8000-byte limit. */
export const CHANNELS = { jobs: 'job_events', jobLogs: 'job_logs' } as const;

const MAX_BACKOFF_MS = 10_000;
const PING_MS = 30_000;

/**
 * Events between processes over PostgreSQL LISTEN/NOTIFY. Each process keeps one dedicated
 * connection that listens on every channel anyone subscribed to; publishing is a `pg_notify`
 * on any connection, so a NOTIFY sent inside a transaction goes out only if it commits.
 * The listening connection comes back by itself after the database goes away.
 */
export class EventBus {
  private client: Client | null = null;
  private readonly handlers = new Map<string, Set<Handler>>();
  private connecting: Promise<void> | null = null;
  private stopped = false;
  private backoffMs = 200;
  private retryTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private everConnected = false;
  private readonly reconnectHandlers = new Set<() => void>();

  constructor(
    private readonly databaseUrl: string,
    private readonly log: Logger,
    /** Bound on connecting and on each query (DATABASE_QUERY_TIMEOUT_MS); a frozen server is left. */
    private readonly queryTimeoutMs = 5000,
  ) {}

  /** Connects and listens; resolves once the first connection is up. */
  start(): Promise<void> {
    return (this.connecting ??= this.connect());
  }

  /** Calls `handler` with every payload on `channel` until the returned function is called. */
  on(channel: string, handler: Handler): () => void {
    let set = this.handlers.get(channel);
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
    }
    set.add(handler);
    return () => set.delete(handler);
  }

  /** Calls `handler` after each reconnection (events of the gap were lost), until the returned function is called. */
  onReconnect(handler: () => void): () => void {
    this.reconnectHandlers.add(handler);
    return () => this.reconnectHandlers.delete(handler);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.pingTimer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new Client({
      connectionString: this.databaseUrl,
      ...boundedConnection(this.queryTimeoutMs, 'media-platform-events'),
    });
    // Its notifications wait until it listens on every channel and those who care know of the gap:
    // one heard earlier would reach them before the older events of the gap they read back.
    let early: Notification[] | null = [];
    client.on('notification', (msg) => (early ? early.push(msg) : this.dispatch(msg.channel, msg.payload)));
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    await client.connect();
    boundQueries(client, this.queryTimeoutMs);
    try {
      // Every channel from the start: a subscriber must not miss events while a LISTEN is sent.
      for (const channel of Object.values(CHANNELS)) await client.query(`LISTEN ${quoteIdent(channel)}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.stopped) return void (await client.end().catch(() => undefined));
    const reconnected = this.everConnected;
    this.client = client;
    this.everConnected = true;
    this.backoffMs = 200;
    // A connection dropped without a word (a NAT, a failover) is found by asking.
    clearInterval(this.pingTimer);
    this.pingTimer = setInterval(() => {
      client.query('select 1').catch((err: Error) => this.lost(client, err));
    }, PING_MS);
    this.pingTimer.unref();
    // Events sent while it was away are gone: those who care look again.
    if (reconnected) for (const cb of this.reconnectHandlers) cb();
    const heard = early;
    early = null;
    for (const msg of heard) this.dispatch(msg.channel, msg.payload);
  }

  private lost(client: Client, err?: Error): void {
    if (this.client !== client || this.stopped) return;
    this.client = null;
    clearInterval(this.pingTimer);
    this.log.warn({ err }, 'event bus connection lost; reconnecting');
    void client.end().catch(() => undefined);
    this.retry();
  }

  private retry(): void {
    if (this.stopped) return;
    this.retryTimer = setTimeout(() => {
      this.connect().catch((err) => {
        this.log.warn({ err, retryInMs: this.backoffMs }, 'event bus cannot reconnect yet');
        this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
        this.retry();
      });
    }, this.backoffMs);
    this.retryTimer.unref();
  }

  private dispatch(channel: string, raw: string | undefined): void {
    const set = this.handlers.get(channel);
    if (!set?.size || raw === undefined) return;
    let payload: unknown;
    try {
      payload = JSON.parse(raw);
    } catch {
      return;
    }
    for (const handler of set) {
      try {
        handler(payload);
      } catch (err) {
        this.log.error({ err, channel }, 'event handler failed');
      }
    }
  }
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Where a Pushable hands its values: each at once, in order; then its end (with an error or not). */
export interface FeedSink<T> {
  next(value: T): void;
  end(err?: unknown): void;
}

/**
 * An async iterator that can instead hand its values to one sink as they come (once asked to, it
 * is not pulled any more): a consumer that is one of thousands (a subscription of a busy owner)
 * then costs a call per value, not a chain of promises.
 */
export interface Pushable<T> extends AsyncIterableIterator<T> {
  pushTo(sink: FeedSink<T>): void;
}

export function isPushable<T>(it: AsyncIterableIterator<T>): it is Pushable<T> {
  return typeof (it as Partial<Pushable<T>>).pushTo === 'function';
}

/**
 * An async iterator fed by pushes, for GraphQL subscriptions. A consumer that falls more than
 * `limit` events behind is ended with an error rather than buffering without bound.
 */
export class EventQueue<T> implements AsyncIterableIterator<T> {
  private readonly buffer: T[] = [];
  private waiting: ((r: IteratorResult<T>) => void) | null = null;
  private failWaiting: ((err: Error) => void) | null = null;
  private done = false;
  private error: Error | null = null;
  private forwardTo: ((value: T) => void) | null = null;

  constructor(
    private readonly onClose: () => void,
    private readonly limit = 1000,
  ) {}

  push(value: T): void {
    if (this.done) return;
    if (this.forwardTo) return this.forwardTo(value);
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = this.failWaiting = null;
      resolve({ value, done: false });
      return;
    }
    if (this.buffer.length >= this.limit)
      return this.fail(new Error('subscriber too slow; events were dropped'));
    this.buffer.push(value);
  }

  /**
   * From now on each value goes to `handler` as it is pushed (those buffered first), not through
   * next(): for a consumer that takes them at once, without a promise per value (see Pushable).
   */
  forward(handler: (value: T) => void): void {
    this.forwardTo = handler;
    for (const value of this.buffer.splice(0)) handler(value);
  }

  fail(err: Error): void {
    if (this.done) return;
    this.error = err;
    if (this.failWaiting) {
      const reject = this.failWaiting;
      this.waiting = this.failWaiting = null;
      this.finish();
      reject(err);
    }
  }

  next(): Promise<IteratorResult<T>> {
    if (this.buffer.length) return Promise.resolve({ value: this.buffer.shift()!, done: false });
    if (this.error) {
      const err = this.error;
      this.finish();
      return Promise.reject(err);
    }
    if (this.done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.waiting = resolve;
      this.failWaiting = reject;
    });
  }

  return(): Promise<IteratorResult<T>> {
    this.finish();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private finish(): void {
    if (this.done) return;
    this.done = true;
    this.buffer.length = 0;
    this.onClose();
    this.waiting?.({ value: undefined, done: true });
    this.waiting = this.failWaiting = null;
  }
}
