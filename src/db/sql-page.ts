import type { EntityManager } from '@mikro-orm/postgresql';
import { isUuid } from '../common/ids';
import {
  decodeCursor,
  encodeCursor,
  pageSize,
  type Keyed,
  type Page,
  type PageArgs,
} from '../common/pagination';
import { queryRows } from './rows';

/** What sqlPage reads: a table, or joined tables whose keyset columns belong to `alias`. */
export interface SqlSource {
  from: string;
  select?: string;
  alias?: string;
}

/**
 * Keyset pagination in one SQL statement, for the busiest lists, where building the query and
 * hydrating entities through the ORM cost more than running it. `conditions` are SQL fragments
 * with `?` placeholders and their values; `read` turns a row into the caller's shape. Same order,
 * cursors and indexes as findPage. `em` only lends its pool (the global one will do: no entity
 * enters an identity map, so forking one per request was pure cost).
 */
export async function sqlPage<T extends Keyed>(
  em: EntityManager,
  source: string | SqlSource,
  conditions: [sql: string, ...values: unknown[]][],
  args: PageArgs,
  read: (row: Record<string, unknown>) => T,
  isId: (id: unknown) => boolean = isUuid,
): Promise<Page<T>> {
  const { from, select = '*', alias } = typeof source === 'string' ? { from: source } : source;
  const [createdAt, id] = alias ? [`${alias}.created_at`, `${alias}.id`] : ['created_at', 'id'];
  const limit = pageSize(args.first);
  const all = [...conditions];
  if (args.after) {
    const cursor = decodeCursor(args.after, isId);
    all.push([`(${createdAt}, ${id}) < (?, ?)`, cursor.createdAt, cursor.id]);
  }
  const rows = await queryRows(
    em,
    `select ${select} from ${from} where ${all.map(([sql]) => sql).join(' and ')}
     order by ${createdAt} desc, ${id} desc limit ?`,
    [...all.flatMap(([, ...values]) => values), limit + 1],
  );
  const items = rows.slice(0, limit).map(read);
  return {
    items,
    hasNextPage: rows.length > limit,
    endCursor: items.length ? encodeCursor(items[items.length - 1]) : null,
  };
}
