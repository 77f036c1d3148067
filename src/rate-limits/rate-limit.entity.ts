import { Entity, PrimaryKey, Property } from '@mikro-orm/core';

/**
 * The counters of every rate limit, shared by all processes: the table rate-limiter-flexible's
 * PostgreSQL store reads and upserts (`<limit>:<key>`, points used, window end in epoch ms).
 * Declared here so that migrations create it; the library never creates tables itself.
 */
@Entity({ tableName: 'rate_limits' })
export class RateLimitCounter {
  @PrimaryKey({ type: 'string', length: 255 })
  key!: string;

  @Property({ type: 'integer', default: 0 })
  points!: number;

  @Property({ type: 'bigint', nullable: true })
  expire!: string | null;
}
