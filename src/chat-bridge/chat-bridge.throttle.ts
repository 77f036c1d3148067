import type { MikroORM } from '@mikro-orm/postgresql';
import { AppError } from '../common/errors';
import { LoginFailure } from './chat-bridge.entity';

export interface ThrottleLimits {
  maxPerUser: number;
  maxPerIp: number;
  windowSeconds: number;
}

/**
 * Failed logins counted per username and per client address over a sliding window, in
 * PostgreSQL so that every bridge process sees the same counts. Two concurrent attempts may both
 * pass the check; the limit can be exceeded by the concurrency of one attacker, not more.
 */
export class LoginThrottle {
  constructor(
    private readonly orm: MikroORM,
    private readonly limits: ThrottleLimits,
  ) {}

  /** RATE_LIMITED (429 with Retry-After) while either count is at its limit. */
  async check(username: string, ip: string): Promise<void> {
    const waits = await Promise.all([
      this.wait('user', username, this.limits.maxPerUser),
      this.wait('ip', ip, this.limits.maxPerIp),
    ]);
    const seconds = Math.max(...waits);
    if (seconds > 0)
      throw new AppError('RATE_LIMITED', 'too many failed logins; try again later', undefined, seconds);
  }

  async failed(username: string, ip: string): Promise<void> {
    const em = this.orm.em.fork();
    em.create(LoginFailure, { scope: 'user', key: username });
    em.create(LoginFailure, { scope: 'ip', key: ip });
    await em.flush();
    await em.nativeDelete(LoginFailure, { createdAt: { $lt: this.windowStart() } });
  }

  /** A successful login clears the username's count (not the address's). */
  async succeeded(username: string): Promise<void> {
    await this.orm.em.fork().nativeDelete(LoginFailure, { scope: 'user', key: username });
  }

  /** Seconds until fewer than `max` failures remain in the window; 0 when already fewer. */
  private async wait(scope: 'user' | 'ip', key: string, max: number): Promise<number> {
    const recent = await this.orm.em
      .fork()
      .find(
        LoginFailure,
        { scope, key, createdAt: { $gte: this.windowStart() } },
        { orderBy: { createdAt: 'desc' }, limit: max, fields: ['createdAt'] },
      );
    if (recent.length < max) return 0;
    const expires = recent[max - 1].createdAt.getTime() + this.limits.windowSeconds * 1000;
    return Math.max(1, Math.ceil((expires - Date.now()) / 1000));
  }

  private windowStart(): Date {
    return new Date(Date.now() - this.limits.windowSeconds * 1000);
  }
}
