import { RateLimited, type LimitState, type RateLimit } from './rate-limiter';

/** A process's share of one key's allowance in the current window. */
interface Lease {
  /** Counted in the store, not yet spent by a request of this process. */
  left: number;
  /** The store's points left for the key after this process's last grant. */
  storeRemaining: number;
  /** When the window the points belong to ends (epoch ms); 0 before the first grant. */
  endsAt: number;
  /** The size of the last grant this window; 0 while the key is cold. */
  last: number;
  /** The grant being fetched, shared by every request of the key that arrives meanwhile. */
  fetching: Promise<void> | null;
  /** Requests of the key waiting for `fetching`. */
  waiting: number;
}

/** A grant never exceeds this fraction of the limit... */
const LIMIT_SHARE = 16;
/** ...nor this fraction of what the store had left at this process's last grant. */
const REMAINING_SHARE = 8;

/**
 * A limit whose points a process takes from the store several at a time and spends from memory
 * (docs/operations.md, "Rate limits"): every point is counted in the store before a request uses
 * it, so processes together never overshoot, and a hot key costs one upsert per lease rather
 * than per request. The size of each grant:
 *
 *   1 while the key is cold (its first grant of the window in this process), then
 *   max(1, min(max(2 × last grant, requests waiting), ⌊limit / 16⌋, ⌊store's remaining / 8⌋))
 *
 * so small limits (under 32) and quiet keys are counted one by one exactly as without leases,
 * and near the limit grants shrink to 1. A lease ends with its window; unspent points are lost
 * with it. At most `maxKeys` keys are held (expired ones dropped first).
 */
export class LeasedLimit {
  private readonly leases = new Map<string, Lease>();
  private sweptAt = 0;

  constructor(
    readonly limit: RateLimit,
    private readonly message: string,
    private readonly maxKeys = 10_000,
  ) {}

  /** Spends a point of the lease the process holds for the key, if any: no store round trip. */
  fromLease(key: string): LimitState | null {
    const lease = this.leases.get(key);
    return lease && lease.left > 0 && lease.endsAt > Date.now() ? this.spend(lease) : null;
  }

  /** Spends a point, fetching a lease when the process holds none; RateLimited past the limit. */
  async take(key: string): Promise<LimitState> {
    for (;;) {
      const lease = this.leaseOf(key);
      if (lease.left > 0 && lease.endsAt > Date.now()) return this.spend(lease);
      lease.fetching ??= this.fetch(key, lease).finally(() => (lease.fetching = null));
      lease.waiting++;
      try {
        await lease.fetching;
      } finally {
        lease.waiting--;
      }
    }
  }

  /** Keys held now (tests read it). */
  get size(): number {
    return this.leases.size;
  }

  private spend(lease: Lease): LimitState {
    lease.left--;
    const { points, windowSeconds } = this.limit.opts;
    return {
      limit: points,
      // Exact within one process; other processes' unspent leases count as spent.
      remaining: lease.storeRemaining + lease.left,
      resetSeconds: Math.max(0, Math.ceil((lease.endsAt - Date.now()) / 1000)),
      windowSeconds,
    };
  }

  private async fetch(key: string, lease: Lease): Promise<void> {
    const points = this.grantSize(lease);
    try {
      const grant = await this.limit.lease(key, points, this.message);
      lease.left = grant.granted;
      lease.last = grant.granted;
      lease.storeRemaining = grant.remaining;
      lease.endsAt = grant.endsAt;
    } catch (err) {
      if (err instanceof RateLimited) {
        lease.left = 0;
        lease.last = 1;
        lease.storeRemaining = 0;
        lease.endsAt = Date.now() + err.state.resetSeconds * 1000;
      }
      throw err;
    }
  }

  private grantSize(lease: Lease): number {
    if (lease.last === 0) return 1;
    const cap = Math.min(
      Math.floor(this.limit.opts.points / LIMIT_SHARE),
      Math.floor(lease.storeRemaining / REMAINING_SHARE),
    );
    return Math.max(1, Math.min(cap, Math.max(2 * lease.last, lease.waiting + 1)));
  }

  /** The key's lease, started afresh when its window has ended. */
  private leaseOf(key: string): Lease {
    const now = Date.now();
    let lease = this.leases.get(key);
    if (!lease) {
      this.sweep(now);
      lease = { left: 0, storeRemaining: 0, endsAt: 0, last: 0, fetching: null, waiting: 0 };
      this.leases.set(key, lease);
    } else if (lease.endsAt <= now && !lease.fetching) {
      lease.left = 0;
      lease.last = 0;
    }
    return lease;
  }

  /**
   * Drops the leases whose window has ended, once a window or when the map is full; then, if it is
   * still full, the oldest keys (their unspent points are lost until their window ends).
   */
  private sweep(now: number): void {
    const full = this.leases.size >= this.maxKeys;
    if (!full && now - this.sweptAt < this.limit.opts.windowSeconds * 1000) return;
    this.sweptAt = now;
    const idle = (l: Lease) => !l.fetching && l.waiting === 0;
    for (const [key, lease] of this.leases) if (lease.endsAt <= now && idle(lease)) this.leases.delete(key);
    for (const [key, lease] of this.leases) {
      if (this.leases.size < this.maxKeys) break;
      if (idle(lease)) this.leases.delete(key);
    }
  }
}
