import type { MikroORM } from '@mikro-orm/postgresql';
import { spendPart } from '../../src/billing/billing.spend';
import type { PriceList } from '../../src/common/price-list';
import { readsOf, sql, withCtes, type Sql } from '../../src/db/sql';

/**
 * Adds the ended jobs that `jobs` selects (rows of `jobs`) to the spend rollup with the very part
 * the statement that ends a job composes (JobStatementParts.ended): for fixtures written as rows.
 */
export async function rollUp(orm: MikroORM, prices: PriceList, jobs: Sql): Promise<void> {
  const part = spendPart(prices, { mail: false })({ jobs: 'upd' });
  const statement = withCtes(
    [{ name: 'upd', sql: jobs }, ...part.ctes],
    sql`select 1${readsOf([part])}`,
  ).compile();
  await orm.em.fork().execute(statement.text, statement.params);
}

export const jobsWhere = (condition: Sql) => sql`select * from jobs where ${condition}`;
export { sql };
