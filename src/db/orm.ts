import { MikroORM, type Options } from '@mikro-orm/postgresql';
import type { Client } from 'pg';
import { Migrator } from '@mikro-orm/migrations';
import { migrationsList } from '../../migrations';
import { entities } from './entities';
import { boundedConnection, boundQueries } from './pg-bounds';

export type Orm = MikroORM;

export interface OrmOptions {
  clientUrl: string;
  /** Called with each SQL statement (tests count them to prove the absence of N+1 queries). */
  onQuery?: (sql: string) => void;
  poolMax?: number;
  /**
   * Bound on opening a connection, waiting for one and on each statement (DATABASE_QUERY_TIMEOUT_MS);
   * 0: none (migrations). Past it the caller gets an error that means "the database is unavailable".
   */
  queryTimeoutMs?: number;
}

export function ormConfig(opts: OrmOptions): Options {
  const timeoutMs = opts.queryTimeoutMs ?? 0;
  return {
    clientUrl: opts.clientUrl,
    entities,
    extensions: [Migrator],
    migrations: {
      migrationsList,
      silent: true,
      transactional: true,
      allOrNothing: true,
      snapshot: false,
      path: 'migrations',
    },
    allowGlobalContext: false,
    forceUtcTimezone: true,
    // Fail within the bound when the server is gone or frozen instead of queueing requests; a
    // connection whose query did not answer is destroyed, and knex drops it from the pool.
    pool: {
      min: 0,
      max: opts.poolMax ?? 10,
      acquireTimeoutMillis: timeoutMs || 60_000,
      idleTimeoutMillis: 10000,
      afterCreate: (connection: Client, done: (err: Error | null, connection: Client) => void) =>
        done(null, boundQueries(connection, timeoutMs)),
    },
    driverOptions: {
      connection: boundedConnection(timeoutMs, 'media-platform'),
      // knex warns on the console of each connection it drops; dropping them is the plan.
      log: { warn: () => undefined },
    },
    debug: opts.onQuery ? ['query'] : false,
    colors: false,
    logger: opts.onQuery ? (msg: string) => opts.onQuery!(msg) : undefined,
    discovery: { warnWhenNoEntities: false },
    metadataCache: { enabled: false },
  };
}

/**
 * Brings the schema up to date with the checked-in migrations (on connections of their own,
 * without the query bound: a migration may rightly take long), then connects for the service.
 */
export async function openOrm(opts: OrmOptions): Promise<Orm> {
  const migrating = await MikroORM.init(ormConfig({ ...opts, onQuery: undefined, queryTimeoutMs: 0 }));
  try {
    await migrating.getMigrator().up();
  } finally {
    await migrating.close(true);
  }
  return MikroORM.init(ormConfig(opts));
}
