import type { Configuration } from '@mikro-orm/core';
import { AbstractSqlDriver, PostgreSqlConnection, PostgreSqlPlatform } from '@mikro-orm/postgresql';

/**
 * MikroORM's connection, with transactions that fail as their `BEGIN` failed. knex hands out a
 * transaction whose `BEGIN` got no answer (the server frozen, the connection destroyed by the
 * bound of src/db/pg-bounds.ts) all the same, and then refuses each of its statements with
 * "Transaction query already complete": an error that no longer says why, so a write during an
 * outage answered 500 INTERNAL instead of 503 UNAVAILABLE. The reason is kept in the
 * transaction's `executionPromise`; `begin` throws it instead.
 */
class TransactionSafeConnection extends PostgreSqlConnection {
  override async begin(options?: Parameters<PostgreSqlConnection['begin']>[0]) {
    const trx = await super.begin(options);
    if (trx.isCompleted()) {
      await trx.executionPromise;
      throw new Error('the transaction ended before it began');
    }
    return trx;
  }
}

/** PostgreSqlDriver (MikroORM's), on the connection above. */
export class PostgreSqlSafeDriver extends AbstractSqlDriver<TransactionSafeConnection> {
  constructor(config: Configuration) {
    super(config, new PostgreSqlPlatform(), TransactionSafeConnection, ['knex', 'pg']);
  }
}
