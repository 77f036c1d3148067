import type { MikroORM } from '@mikro-orm/postgresql';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { ownerOf, type Principal } from '../auth/principal';
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
}

/**
 * A fixed-window limit of `points` per key, counted in PostgreSQL (rate-limiter-flexible's store,
 * on the ORM's pool) so that every process shares it. Each attempt is one atomic upsert: concurrent
 * attempts never overshoot, whichever process they reach.
 */
export class RateLimit {
  private readonly limiter: RateLimiterPostgres;

  constructor(
    orm: MikroORM,
    readonly opts: LimitOptions,
  ) {
    this.limiter = new RateLimiterPostgres({
      storeClient: orm.em.getKnex(),
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
    try {
      return this.state(await this.limiter.consume(key, points));
    } catch (err) {
      if (err instanceof RateLimiterRes) throw new RateLimited(this.state(err), message);
      throw err;
    }
  }

  /** Gives points back (an attempt that turned out to be fine). */
  async giveBack(key: string, points = 1): Promise<void> {
    await this.limiter.reward(key, points);
  }

  /** Forgets the key's count. */
  async reset(key: string): Promise<void> {
    await this.limiter.delete(key);
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
