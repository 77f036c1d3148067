import type { MikroORM } from '@mikro-orm/postgresql';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { GraphQLError } from 'graphql';
import type { Principal } from '../common/principal';
import type { Config } from '../config';
import { isDatabaseUnavailable, toAppError } from '../common/errors';
import type { Logger } from '../common/logger';
import { LeasedLimit } from './rate-limit.leases';
import { limitKey, RateLimit, RateLimited, rateLimitHeaders, type LimitState } from './rate-limiter';

const MINUTE = 60;

/**
 * The per-principal limits of the API's requests (`RATE_LIMIT_PER_MINUTE`) and uploads
 * (`RATE_LIMIT_UPLOADS_PER_MINUTE`), per minute; 0 turns one off. Deployment creation has its
 * own, in the deployment service, whichever way it is asked for. Shared by all processes through
 * PostgreSQL, each taking a key's points in leases (rate-limit.leases.ts). A request that finds
 * points in its process's lease is served without the store, during a database outage too (its
 * point was counted; its own statements answer 503 if it needs the database). One that must
 * fetch a lease while the database is unavailable (docs/faults.md) cannot be counted, and is
 * answered 503 UNAVAILABLE within the query bound, as any request that needs the database is
 * (letting it through would make it wait for the bound a second time). Any other failure of the
 * store lets requests through.
 */
export class RequestLimits {
  private readonly requests: LeasedLimit | null;
  private readonly uploads: LeasedLimit | null;

  constructor(
    orm: MikroORM,
    config: Pick<Config, 'rateLimitPerMinute' | 'rateLimitUploadsPerMinute'>,
    private readonly log: Logger,
  ) {
    const limit = (name: string, points: number, message: string, sweeps = false) =>
      points > 0
        ? new LeasedLimit(
            new RateLimit(orm, { name, points, windowSeconds: MINUTE, blockInMemory: true, sweeps }),
            message,
          )
        : null;
    this.requests = limit('requests', config.rateLimitPerMinute, 'too many requests', true);
    this.uploads = limit('uploads', config.rateLimitUploadsPerMinute, 'too many uploads');
  }

  /** Every API request (REST, GraphQL over HTTP). */
  requestMiddleware(): RequestHandler {
    return this.middleware(this.requests);
  }

  uploadMiddleware(): RequestHandler {
    return this.middleware(this.uploads);
  }

  /** A websocket operation: counted like a request. Answers the error to send, if any. */
  async subscription(principal: Principal | null, ip: string | undefined): Promise<GraphQLError | null> {
    try {
      await this.take(this.requests, limitKey(principal, ip));
      return null;
    } catch (err) {
      // RATE_LIMITED or UNAVAILABLE, formatted (Retry-After in extensions) like any error.
      const { error, unexpected } = toAppError(err);
      if (unexpected) throw err;
      return new GraphQLError(error.message, { originalError: error });
    }
  }

  private middleware(limit: LeasedLimit | null): RequestHandler {
    // Off: passes the request on at once (an async no-op cost a promise and a turn per request).
    if (!limit) return (_req, _res, next) => next();
    return (req: Request, res: Response, next: NextFunction) => {
      const key = limitKey((res.locals.principal as Principal | null) ?? null, req.ip);
      // A point of the process's lease: no promise, no round trip.
      const leased = limit.fromLease(key);
      if (leased) {
        res.set(rateLimitHeaders(leased));
        return next();
      }
      this.take(limit, key)
        .then((state) => {
          if (state) res.set(rateLimitHeaders(state));
          next();
        })
        .catch(next); // a RateLimited answer carries its headers (sendError)
    };
  }

  /** The state after taking a point, or null when the limit is off or its store unreachable. */
  private async take(limit: LeasedLimit | null, key: string): Promise<LimitState | null> {
    if (!limit) return null;
    try {
      return await limit.take(key);
    } catch (err) {
      if (err instanceof RateLimited || isDatabaseUnavailable(err)) throw err;
      this.log.warn(
        { err, limit: limit.limit.opts.name },
        'rate limit store unreachable; request let through',
      );
      return null;
    }
  }
}
