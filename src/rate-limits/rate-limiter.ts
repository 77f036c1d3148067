import type { Knex, MikroORM } from '@mikro-orm/postgresql';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { ownerOf, type Principal } from '../common/principal';
import { AppError } from '../common/errors';

export interface LimitOptions {
  /** Names the counters (`<name>:<key>`). */
  name: string;
  points: number;
  windowSeconds: number;
  /**
   * Once a key is over, further attempts in this process are refused from memory until the
   * window ends, without a database round trip (not for limits whose counts are reset early).
   */
  blockInMemory?: boolean;
  /** One limiter per table deletes its expired rows every few minutes. */
  sweeps?: boolean;
}

/** Whose allowance a request spends: its principal's owner, or its address when anonymous. */
export function limitKey(principal: Principal | null, ip: string | undefined): string {
  if (!principal) return `ip:${ip ?? 'unknown'}`;
  const owner = ownerOf(principal);
  return `${owner.type}:${owner.id}`;
}

/** Where a key stands after an attempt: what `RateLimit-*` headers say. */
export interface LimitState {
  limit: number;
  remaining: number;
  /** Seconds until the window ends. */
  resetSeconds: number;
  windowSeconds: number;
}

/** `RateLimit-*` headers (IETF draft): the allowance, what is left, seconds to the next window. */
export function rateLimitHeaders(state: LimitState): Record<string, string> {
  return {
    'RateLimit-Limit': String(state.limit),
    'RateLimit-Remaining': String(state.remaining),
    'RateLimit-Reset': String(state.resetSeconds),
    'RateLimit-Policy': `${state.limit};w=${state.windowSeconds}`,
  };
}

/** Thrown by `take` past the limit: RATE_LIMITED (429) with Retry-After, and the key's state. */
export class RateLimited extends AppError {
  constructor(
    readonly state: LimitState,
    message: string,
  ) {
    super('RATE_LIMITED', message, undefined, Math.max(1, state.resetSeconds));
  }

  override get headers(): Record<string, string> {
    return rateLimitHeaders(this.state);
  }
}

/** What `RateLimit.lease` granted. */
export interface Grant {
  granted: number;
  /** The key's points left in the store after this grant. */
  remaining: number;
  /** When the key's window ends, in epoch milliseconds. */
  endsAt: number;
}

/**
 * rate-limiter-flexible's upsert (`<limit>:<key>`, points, expire), but all-or-nothing: a window
 * that has ended starts again with the lease; a live one takes it only if it fits under the limit.
 * No row back means it did not fit.
 */
const LEASE_SQL = `
  insert into rate_limits as r (key, points, expire) values (:key, :points, :expire)
  on conflict (key) do update set
    points = case when r.expire <= :now then excluded.points else r.points + excluded.points end,
    expire = case when r.expire <= :now then excluded.expire else r.expire end
  where r.expire <= :now or r.points + excluded.points <= :limit
  returning points, expire`;

/**
 * A fixed-window limit of `points` per key, counted in PostgreSQL (rate-limiter-flexible's store,
 * on the ORM's pool) so that every process shares it. Each attempt is one atomic upsert: concurrent
 * attempts never overshoot, whichever process they reach.
 */
export class RateLimit {
  private readonly limiter: RateLimiterPostgres;
  private readonly knex: Knex;

  constructor(
    orm: MikroORM,
    readonly opts: LimitOptions,
  ) {
    this.knex = orm.em.getKnex();
    this.limiter = new RateLimiterPostgres({
      storeClient: this.knex,
      storeType: 'knex',
      tableName: 'rate_limits',
      tableCreated: true,
      clearExpiredByTimeout: opts.sweeps ?? false,
      keyPrefix: opts.name,
      points: opts.points,
      duration: opts.windowSeconds,
      inMemoryBlockOnConsumed: opts.blockInMemory ? opts.points + 1 : undefined,
    });
  }

  /** Uses `points` of the key's allowance; RateLimited when it is spent. Store errors are thrown. */
  async take(key: string, message: string, points = 1): Promise<LimitState> {
    return this.state(await this.consume(key, message, points));
  }

  /**
   * Takes `points` at once for a process's lease (rate-limit.leases.ts): all of them when they fit
   * in what is left of the key's window, in one upsert that leaves the row untouched otherwise;
   * when they do not fit, one point as `take` does (RateLimited when none is left). So a lease
   * never overshoots, and never spends points it was not granted. Answers the points granted,
   * what the store has left after them, and when the window ends (epoch ms).
   */
  async lease(key: string, points: number, message: string): Promise<Grant> {
    if (points > 1) {
      const now = Date.now();
      const { rows } = await this.knex.raw<{ rows: { points: number; expire: string }[] }>(LEASE_SQL, {
        key: `${this.opts.name}:${key}`,
        points,
        expire: now + this.opts.windowSeconds * 1000,
        now,
        limit: this.opts.points,
      });
      if (rows.length) {
        return {
          granted: points,
          remaining: Math.max(0, this.opts.points - rows[0].points),
          endsAt: Number(rows[0].expire),
        };
      }
    }
    const res = await this.consume(key, message, 1);
    return { granted: 1, remaining: Math.max(0, res.remainingPoints), endsAt: Date.now() + res.msBeforeNext };
  }

  /** Gives points back (an attempt that turned out to be fine). */
  async giveBack(key: string, points = 1): Promise<void> {
    await this.limiter.reward(key, points);
  }

  /** Forgets the key's count. */
  async reset(key: string): Promise<void> {
    await this.limiter.delete(key);
  }

  private async consume(key: string, message: string, points: number): Promise<RateLimiterRes> {
    try {
      return await this.limiter.consume(key, points);
    } catch (err) {
      if (err instanceof RateLimiterRes) throw new RateLimited(this.state(err), message);
      throw err;
    }
  }

  private state(res: RateLimiterRes): LimitState {
    return {
      limit: this.opts.points,
      remaining: Math.max(0, res.remainingPoints),
      resetSeconds: Math.max(0, Math.ceil(res.msBeforeNext / 1000)),
      windowSeconds: this.opts.windowSeconds,
    };
  }
}
