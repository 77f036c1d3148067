import type { Logger } from '../common/logger';
import type { Principal } from '../common/principal';
import type { JobEvents } from '../jobs/job.events';
import type { JobEvent } from '../jobs/job.service';
import type { BatchStore } from './batch.store';
import { viewOf, type BatchService, type BatchView } from './batch.service';

/** At most one update per batch in this window (leading and trailing edge): a few a second whatever the jobs. */
export const BATCH_UPDATE_MS = 250;

type Watcher = (view: BatchView, last: boolean) => void;

/** The watchers of one batch and where its coalescing stands. */
interface Watched {
  watchers: Set<Watcher>;
  /** When its counts were last read (the window starts there). */
  readAt: number;
  timer: NodeJS.Timeout | null;
  reading: boolean;
  /** A change heard while reading: read once more after it. */
  again: boolean;
}

/**
 * Live batch progress (GraphQL `batchUpdated`, SSE `/api/v1/batches/{id}/events`): one listener
 * per process on every job's transitions (JobEvents, itself one listener on the bus), whatever the
 * number of watchers. A transition of a job of a watched batch marks the batch changed; its counts
 * are read (one statement) at once if none was read in the last BATCH_UPDATE_MS, else at the end
 * of that window, and the read is sent to all its watchers: at most 1000 / BATCH_UPDATE_MS updates
 * a second per batch, whatever the number of jobs or watchers. The update that finds the batch
 * completed or canceled is the last. Transitions read back after a gap in the bus carry no job
 * (so no batch): each watched batch is read again then.
 */
export class BatchLive {
  private readonly watched = new Map<string, Watched>();
  private listening: Promise<() => void> | null = null;

  constructor(
    private readonly events: JobEvents,
    private readonly batches: BatchService,
    private readonly store: BatchStore,
    private readonly log?: Logger,
    private readonly windowMs = BATCH_UPDATE_MS,
  ) {}

  /**
   * Calls `watcher` with the batch as it is now, then with each coalesced change, the last one
   * with `last` set (the batch completed or was canceled); another owner's batch is 404. Answers
   * the function that stops it.
   */
  async watch(principal: Principal, id: string, watcher: Watcher): Promise<() => void> {
    const first = await this.batches.get(principal, id);
    const batchId = first.batch.id;
    await (this.listening ??= this.events
      .onTransition('every', (e) => this.heard(e))
      .catch((err) => {
        this.listening = null;
        throw err;
      }));
    let w = this.watched.get(batchId);
    if (!w)
      this.watched.set(
        batchId,
        (w = { watchers: new Set(), readAt: 0, timer: null, reading: false, again: false }),
      );
    const own: Watcher = (v, last) => watcher(v, last);
    w.watchers.add(own);
    const stop = () => {
      const now = this.watched.get(batchId);
      if (!now?.watchers.delete(own) || now.watchers.size) return;
      if (now.timer) clearTimeout(now.timer);
      this.watched.delete(batchId);
    };
    const last = first.status !== 'running';
    watcher(first, last);
    if (last) stop();
    // A change between the first read and listening is caught by reading again once.
    else this.changed(batchId);
    return stop;
  }

  /**
   * The same as an async iterator (a GraphQL subscription): it ends after the last update, and
   * `return()` stops watching at once. Updates not taken yet are coalesced to the latest.
   */
  async iterate(principal: Principal, id: string): Promise<AsyncIterableIterator<BatchView>> {
    let pending: BatchView | null = null;
    let ended = false;
    let wake: (() => void) | null = null;
    const stop = await this.watch(principal, id, (view, last) => {
      pending = view;
      ended ||= last;
      wake?.();
    });
    const iterator: AsyncIterableIterator<BatchView> = {
      next: async () => {
        while (!pending && !ended) await new Promise<void>((r) => (wake = r));
        wake = null;
        const value = pending;
        pending = null;
        if (value) return { value, done: false };
        stop();
        return { value: undefined, done: true };
      },
      return: async () => {
        ended = true;
        pending = null;
        stop();
        wake?.();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  /** Watched batches now (tests, metrics). */
  get size(): number {
    return this.watched.size;
  }

  private heard(e: JobEvent): void {
    if (!this.watched.size) return;
    const batchId = e.job ? (e.job.batch as string | null | undefined) : undefined;
    if (batchId === undefined) for (const id of this.watched.keys()) this.changed(id);
    else if (batchId !== null) this.changed(batchId);
  }

  /** A change of `batchId`: read now (leading edge) or at the end of the window (trailing edge). */
  private changed(batchId: string): void {
    const w = this.watched.get(batchId);
    if (!w) return;
    if (w.reading) return void (w.again = true);
    if (w.timer) return;
    const wait = w.readAt + this.windowMs - Date.now();
    if (wait <= 0) void this.read(batchId, w);
    else w.timer = setTimeout(() => void this.read(batchId, w), wait);
  }

  private async read(batchId: string, w: Watched): Promise<void> {
    w.timer = null;
    w.reading = true;
    w.readAt = Date.now();
    try {
      const batch = await this.store.byId(batchId);
      if (!batch) return this.end(batchId, w, null);
      const view = viewOf(batch, await this.batches.counts(batchId));
      if (view.status !== 'running') return this.end(batchId, w, view);
      for (const watcher of w.watchers) watcher(view, false);
    } catch (err) {
      this.log?.warn({ err, batchId }, 'cannot read a batch for its watchers; trying again');
      w.again = true;
    } finally {
      w.reading = false;
      if (w.again && this.watched.get(batchId) === w) {
        w.again = false;
        this.changed(batchId);
      }
    }
  }

  /** The last update (null: the batch is gone), then the watchers are let go. */
  private end(batchId: string, w: Watched, view: BatchView | null): void {
    if (this.watched.get(batchId) === w) this.watched.delete(batchId);
    w.again = false;
    for (const watcher of w.watchers) if (view) watcher(view, true);
    w.watchers.clear();
  }
}
