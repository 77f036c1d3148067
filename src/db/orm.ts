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
   * 0: none. Past it the caller gets an error that means "the database is unavailable".
   */
  queryTimeoutMs?: number;
  /** Statements without the bound (migrations: one may rightly take long); connecting keeps it. */
  unboundedStatements?: boolean;
}

export function ormConfig(opts: OrmOptions): Options {
  const timeoutMs = opts.queryTimeoutMs ?? 0;
  const statementMs = opts.unboundedStatements ? 0 : timeoutMs;
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
        done(null, boundQueries(connection, statementMs)),
    },
    driverOptions: {
      connection: boundedConnection(timeoutMs, 'media-platform', statementMs > 0),
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

/** The database named by a URL could not be reached: one line naming where and why. */
export class DatabaseUnreachable extends Error {
  constructor(url: string, cause: unknown) {
    const u = new URL(url);
    super(`cannot reach the database at ${u.hostname}:${u.port || 5432}: ${connectionProblem(cause)}`);
    this.name = 'DatabaseUnreachable';
  }
}

/** Why a connection failed, in words (the driver's codes are not for people). */
function connectionProblem(err: unknown): string {
  const e = err as { code?: string; message?: string };
  switch (e?.code) {
    case 'ECONNREFUSED':
      return 'connection refused (is PostgreSQL running and listening there?)';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'no such host';
    case 'ETIMEDOUT':
      return 'the connection timed out';
    case 'ECONNRESET':
      return 'the connection was reset';
    case '28P01':
    case '28000':
    case '3D000':
      return e.message ?? e.code; // wrong password, no such role, no such database: its own words
  }
  if (/timeout|terminated unexpectedly/i.test(e?.message ?? ''))
    return 'no answer in time (connection timed out)';
  return e?.message?.split('\n')[0] ?? String(err);
}

/** Failures of the first connection that say the database is not there for us. */
function isConnectionFailure(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return (
    [
      'ECONNREFUSED',
      'ENOTFOUND',
      'EAI_AGAIN',
      'ETIMEDOUT',
      'ECONNRESET',
      'EHOSTUNREACH',
      'ENETUNREACH',
      '28P01',
      '28000',
      '3D000',
    ].includes(e?.code ?? '') || /timeout|terminated unexpectedly|self.signed|SSL/i.test(e?.message ?? '')
  );
}

/**
 * Brings the schema up to date with the checked-in migrations (on connections of their own,
 * whose statements are not bounded: a migration may rightly take long; connecting is), then
 * connects for the service.
 * `migrate: false` only connects (`npm run migrate` runs the migrator itself).
 */
export async function openOrm(opts: OrmOptions & { migrate?: boolean }): Promise<Orm> {
  const unreachable = (err: unknown) =>
    isConnectionFailure(err) ? new DatabaseUnreachable(opts.clientUrl, err) : err;
  const open = async (o: OrmOptions, then: (orm: Orm) => Promise<unknown>) => {
    const orm = await MikroORM.init(ormConfig(o)).catch((err) => {
      throw unreachable(err);
    });
    try {
      await orm.em.getConnection().execute('select 1');
      await then(orm);
    } catch (err) {
      await orm.close(true).catch(() => undefined);
      throw unreachable(err);
    }
    return orm;
  };
  if (opts.migrate !== false) {
    const migrating = await open({ ...opts, onQuery: undefined, unboundedStatements: true }, (orm) =>
      orm.getMigrator().up(),
    );
    await migrating.close(true);
  }
  return open(opts, async () => undefined);
}

/** Whether the database answers `select 1` within `timeoutMs` (readiness probes). */
export async function databaseAnswers(orm: Orm, timeoutMs = 2000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      orm.em.getConnection().execute('select 1'),
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), timeoutMs))),
    ]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
