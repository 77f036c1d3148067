import type { MikroORM } from '@mikro-orm/postgresql';
import { RateLimit } from '../rate-limits/rate-limiter';

export interface ThrottleLimits {
  maxPerUser: number;
  maxPerIp: number;
  windowSeconds: number;
}

const MESSAGE = 'too many failed logins; try again later';

/**
 * Failed logins per username and per client address within a window, on the shared rate limits
 * (PostgreSQL), so every bridge process sees the same counts. Each attempt takes its point before
 * the password is checked and a success gives it back: concurrent attempts cannot overshoot.
 */
export class LoginThrottle {
  private readonly perUser: RateLimit;
  private readonly perIp: RateLimit;

  constructor(orm: MikroORM, limits: ThrottleLimits) {
    const windowSeconds = limits.windowSeconds;
    this.perUser = new RateLimit(orm, {
      name: 'bridge-login-user',
      points: limits.maxPerUser,
      windowSeconds,
    });
    this.perIp = new RateLimit(orm, { name: 'bridge-login-ip', points: limits.maxPerIp, windowSeconds });
  }

  /** Counts an attempt; RATE_LIMITED (429 with Retry-After) while either count is spent. */
  async attempt(username: string, ip: string): Promise<void> {
    await this.perUser.take(username, MESSAGE);
    try {
      await this.perIp.take(ip, MESSAGE);
    } catch (err) {
      await this.perUser.giveBack(username); // refused before any password was tried
      throw err;
    }
  }

  /** A successful login clears the username's count and does not count for the address. */
  async succeeded(username: string, ip: string): Promise<void> {
    await Promise.all([this.perUser.reset(username), this.perIp.giveBack(ip)]);
  }
}
