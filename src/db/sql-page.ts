import type { EntityManager } from '@mikro-orm/postgresql';
import { isUuid } from '../common/ids';
import {
  decodeCursor,
  encodeCursor,
  pageSize,
  LIST_TIMEOUT_MS,
  SCAN_BUDGET,
  type Keyed,
  type Page,
  type PageArgs,
} from '../common/pagination';
import { queryRows } from './rows';

/**
 * A row of another table that each row of a page looks up: `table` aliased `as`, found by `on`
 * (no placeholders); `optional`: the page's row stays when there is none (a left join).
 */
export interface SqlLookup {
  table: string;
  as: string;
  on: string;
  optional?: boolean;
}

/**
 * What sqlPage reads: a table, or joined tables whose keyset columns belong to `alias`. `join`:
 * rows looked up for the page's rows of `from` (aliased `alias`) once the page is chosen, one
 * index lookup per row answered whatever the scan read. Each is a lateral subquery with a limit,
 * which PostgreSQL cannot flatten: as a plain join, a small table (10,000 deployments) was
 * planned as a hash join over all of its rows, 2 ms for a page of 50 (docs/performance.md, Lists).
 */
export interface SqlSource {
  from: string;
  select?: string;
  alias?: string;
  join?: SqlLookup[];
}

/** The lookups as SQL: `join lateral (select * from t x where ... limit 1) x on true`. */
export const lookupsSql = (lookups: SqlLookup[]) =>
  lookups
    .map(
      (l) =>
        `${l.optional ? 'left ' : ''}join lateral (select * from ${l.table} ${l.as} where ${l.on} limit 1) ${l.as} on true`,
    )
    .join(' ');

/** A SQL fragment with `?` placeholders, and its values. */
export type SqlCondition = [sql: string, ...values: unknown[]];

/**
 * What a page selects. `where`: the conditions the keyset index serves (its leading columns,
 * such as the owner), so that every row the index yields is in the list's order. `filter`:
 * conditions checked on each row read; a page reads at most `budget` rows for them
 * (docs/architecture.md, "Lists").
 */
export interface SqlConditions {
  where: SqlCondition[];
  filter?: SqlCondition[];
  budget?: number;
  /**
   * The rows whose `columns` hold `values` (an owner), read through an index on those columns
   * then (created_at, id): written as a range of that index's keys, not as equalities, and
   * ordered by all its columns, so that only that index serves the page. With equalities, a
   * table that also has a (created_at, id) index of all its rows (the model catalogue) was read
   * through that one when the owner holds most rows, its other rows examined besides the budget.
   */
  within?: { columns: string[]; values: unknown[] };
}

/**
 * Keyset pagination in one SQL statement, for the busiest lists, where building the query and
 * hydrating entities through the ORM cost more than running it. `read` turns a row into the
 * caller's shape. Same order, cursors and indexes as findPage. `em` only lends its pool (the
 * global one will do: no entity enters an identity map, so forking one per request was pure cost).
 * A bare array of conditions is all `where`.
 */
export async function sqlPage<T extends Keyed>(
  em: EntityManager,
  source: string | SqlSource,
  conditions: SqlCondition[] | SqlConditions,
  args: PageArgs,
  read: (row: Record<string, unknown>) => T,
  isId: (id: unknown) => boolean = isUuid,
): Promise<Page<T>> {
  const { from, select = '*', alias, join } = typeof source === 'string' ? { from: source } : source;
  const {
    where,
    filter = [],
    budget = SCAN_BUDGET,
    within,
  } = Array.isArray(conditions) ? { where: conditions } : conditions;
  const column = (c: string) => (alias ? `${alias}.${c}` : c);
  const prefix = (within?.columns ?? []).map(column);
  const prefixValues = within?.values ?? [];
  const key = [...prefix, column('created_at'), column('id')];
  const limit = pageSize(args.first);
  const all = [...where];
  const marks = (n: number) => Array.from({ length: n }, () => '?').join(', ');
  if (prefix.length) all.push([`(${prefix.join(', ')}) >= (${marks(prefix.length)})`, ...prefixValues]);
  if (args.after) {
    const cursor = decodeCursor(args.after, isId);
    all.push([`(${key.join(', ')}) < (${marks(key.length)})`, ...prefixValues, cursor.createdAt, cursor.id]);
  } else if (prefix.length)
    all.push([`(${prefix.join(', ')}) <= (${marks(prefix.length)})`, ...prefixValues]);
  const values = (cs: SqlCondition[]) => cs.flatMap(([, ...v]) => v);
  const sql = (cs: SqlCondition[]) => cs.map(([s]) => s).join(' and ');
  const order = `order by ${key.map((c) => `${c} desc`).join(', ')}`;
  const scan = `from ${from} where ${sql(all) || 'true'} ${order}`;
  // With joins, the page is chosen from `from`'s rows alone, then joined (in the same statement).
  const [inner, joined] = join?.length
    ? [
        `${alias}.*`,
        (page: string, more = '') =>
          `select ${select}${more} from (${page}) ${alias} ${lookupsSql(join)} ${order}`,
      ]
    : [select, (page: string) => page];
  if (!filter.length) {
    const rows = await queryRows(
      em,
      joined(`select ${inner} ${scan} limit ?`),
      [...values(all), limit + 1],
      false,
      LIST_TIMEOUT_MS,
    );
    return pageOf(rows.map(read), limit, null);
  }
  // The index yields the owner's rows in order, at most `budget` of them; the filters only mark
  // each. Every node above the scan passes rows on as they come, so a page whose filters match
  // often stops after `limit + 1` rows. The budget-th row read comes back even if unmarked: the
  // page ends there, and the next one starts after it.
  const rows = await queryRows(
    em,
    joined(
      `select * from (
         select *, row_number() over () as page_scanned from (
           select ${inner}, (${sql(filter)}) as page_hit ${scan} limit ?
         ) scan
       ) scanned where page_hit or page_scanned = ? limit ?`,
      `, ${alias}.page_hit, ${alias}.page_scanned`,
    ),
    [...values(filter), ...values(all), budget, budget, limit + 1],
    false,
    LIST_TIMEOUT_MS,
  );
  const hits = rows.filter((r) => r.page_hit).map(read);
  const last = rows[rows.length - 1];
  const stopped = hits.length <= limit && last !== undefined && Number(last.page_scanned) === budget;
  return pageOf(hits, limit, stopped ? read(last) : null);
}

/**
 * A page of `limit` of `items` (which may hold one more, saying that more follow). `stoppedAt`:
 * the last row the scan budget let the page read; the next page starts after it.
 */
function pageOf<T extends Keyed>(items: T[], limit: number, stoppedAt: T | null): Page<T> {
  const page = items.slice(0, limit);
  const end = stoppedAt ?? page[page.length - 1];
  return {
    items: page,
    hasNextPage: items.length > limit || stoppedAt !== null,
    endCursor: end ? encodeCursor(end) : null,
    scanLimited: stoppedAt !== null,
  };
}
