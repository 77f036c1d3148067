import { MikroORM, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { migrationsList } from '../../migrations';
import { entities } from './entities';

export type Orm = MikroORM;

export interface OrmOptions {
  clientUrl: string;
  /** Called with each SQL statement (tests count them to prove the absence of N+1 queries). */
  onQuery?: (sql: string) => void;
  poolMax?: number;
}

export function ormConfig(opts: OrmOptions): Options {
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
    // Fail fast when the server is gone instead of queueing requests for a minute.
    pool: { min: 0, max: opts.poolMax ?? 10, acquireTimeoutMillis: 5000, idleTimeoutMillis: 10000 },
    driverOptions: { connection: { connectionTimeoutMillis: 3000, statement_timeout: 30000 } },
    debug: opts.onQuery ? ['query'] : false,
    colors: false,
    logger: opts.onQuery ? (msg: string) => opts.onQuery!(msg) : undefined,
    discovery: { warnWhenNoEntities: false },
    metadataCache: { enabled: false },
  };
}

/** Connects and brings the schema up to date with the checked-in migrations. */
export async function openOrm(opts: OrmOptions): Promise<Orm> {
  const orm = await MikroORM.init(ormConfig(opts));
  await orm.getMigrator().up();
  return orm;
}
