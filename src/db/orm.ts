import { MikroORM, type Options } from '@mikro-orm/postgresql';
import { DefaultLogger, type EntityClass, type LogContext, type LoggerOptions } from '@mikro-orm/core';
import type { Client } from 'pg';
import { boundedConnection, boundQueries } from './pg-bounds';
import { installTextArrayParser } from './rows';
import { PostgreSqlSafeDriver } from './orm.driver';

export type Orm = MikroORM;

export interface OrmOptions {
  clientUrl: string;
  /** The entity classes (src/server/entities.ts); none (`[]`) to only run migrations. */
  entities: EntityClass<unknown>[];
  /**
   * Called with each SQL statement (tests count them to prove the absence of N+1 queries), and
   * its values when they were sent apart from the text (queryRows: tests explain such statements).
   */
  onQuery?: (sql: string, values?: readonly unknown[]) => void;
  poolMax?: number;
  /**
   * Bound on opening a connection, waiting for one and on each statement (DATABASE_QUERY_TIMEOUT_MS);
   * 0: none. Past it the caller gets an error that means "the database is unavailable".
   */
  queryTimeoutMs?: number;
  /** Statements without the bound (migrations: one may rightly take long); connecting keeps it. */
  unboundedStatements?: boolean;
  /** With the checked-in migrations configured, for `orm.migrator` (which MikroORM loads on first use). */
  migrations?: boolean;
}

export function ormConfig(opts: OrmOptions): Options {
  const timeoutMs = opts.queryTimeoutMs ?? 0;
  const statementMs = opts.unboundedStatements ? 0 : timeoutMs;
  return {
    clientUrl: opts.clientUrl,
    entities: opts.entities,
    ...(opts.migrations ? { migrations: migrationsConfig() } : {}),
    allowGlobalContext: false,
    forceUtcTimezone: true,
    // Transactions whose BEGIN failed say why (src/db/orm.driver.ts).
    driver: PostgreSqlSafeDriver,
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
    ...(opts.onQuery ? { loggerFactory: (o: LoggerOptions) => new QueryListener(o, opts.onQuery!) } : {}),
    discovery: { warnWhenNoEntities: false },
    metadataCache: { enabled: false },
  };
}

/** The ORM's logger, telling `onQuery` of each statement as printed, with its values. */
class QueryListener extends DefaultLogger {
  constructor(
    options: LoggerOptions,
    private readonly onQuery: NonNullable<OrmOptions['onQuery']>,
  ) {
    super({ ...options, writer: () => undefined });
  }

  override logQuery(context: LogContext): void {
    if (!this.isEnabled('query', context)) return;
    this.onQuery(
      `[query] ${context.query}${context.took != null ? ` [took ${context.took} ms]` : ''}`,
      context.params,
    );
  }
}

/**
 * The checked-in migrations, loaded only to migrate: they pull in the migrator (umzug,
 * @rushstack, ajv), about 3 MiB of heap that a serving process would carry for nothing, and
 * every MiB of live heap costs more of peak RSS (docs/performance.md, "Memory").
 */
function migrationsConfig(): NonNullable<Options['migrations']> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { migrationsList } = require('../../migrations') as typeof import('../../migrations');
  return {
    migrationsList,
    silent: true,
    transactional: true,
    allOrNothing: true,
    snapshot: false,
    path: 'migrations',
  };
}

/** The database named by a URL could not be reached: one line naming where and why. */
export class DatabaseUnreachable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DatabaseUnreachable';
  }

  static at(url: string, cause: unknown): DatabaseUnreachable {
    const u = new URL(url);
    return new DatabaseUnreachable(
      `cannot reach the database at ${u.hostname}:${u.port || 5432}: ${connectionProblem(cause)}`,
    );
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
 * Brings the schema up to date with the checked-in migrations, on connections of their own whose
 * statements are not bounded (a migration may rightly take long; connecting is).
 */
export async function migrateSchema(opts: OrmOptions): Promise<void> {
  const orm = await open({ ...opts, onQuery: undefined, unboundedStatements: true, migrations: true }, (o) =>
    o.migrator.up(),
  );
  await orm.close(true);
}

/**
 * Brings the schema up to date (`migrateSchema`), then connects for the service.
 * `migrate: false` only connects (the service migrates in a worker thread first:
 * src/db/migrate.ts; `npm run migrate` runs the migrator itself).
 */
export async function openOrm(opts: OrmOptions & { migrate?: boolean }): Promise<Orm> {
  if (opts.migrate !== false) await migrateSchema(opts);
  return open(opts, async () => undefined);
}

/** Initialises an ORM and proves it connects; failures to reach the database say so in one line. */
async function open(opts: OrmOptions, then: (orm: Orm) => Promise<unknown>): Promise<Orm> {
  installTextArrayParser();
  const unreachable = (err: unknown) =>
    isConnectionFailure(err) ? DatabaseUnreachable.at(opts.clientUrl, err) : err;
  const orm = await MikroORM.init(ormConfig(opts)).catch((err) => {
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
