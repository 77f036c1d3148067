import type { EntityManager } from '@mikro-orm/postgresql';
import type { EntityName, FilterQuery, FindOptions } from '@mikro-orm/core';
import { AppError } from './errors';
import { isUuid } from './ids';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;
/**
 * Rows a page reads at most for conditions its index does not serve (an exclusion, a rare
 * combination): past it the page ends, short, with the cursor to go on (docs/architecture.md, "Lists").
 */
export const SCAN_BUDGET = 10_000;
/**
 * The bound of a list's statement (a request class of its own, under DATABASE_QUERY_TIMEOUT_MS):
 * a page reads at most SCAN_BUDGET rows, some milliseconds of work, so one that runs this long
 * waits on a database in trouble and is canceled (503) rather than hold its connection.
 */
export const LIST_TIMEOUT_MS = 2000;

export interface PageArgs {
  first?: number | null;
  after?: string | null;
}

export interface Page<T> {
  items: T[];
  endCursor: string | null;
  hasNextPage: boolean;
  /**
   * The page ended at the scan budget: it may hold fewer than asked for (none, even) while more
   * follow after `endCursor`.
   */
  scanLimited?: boolean;
}

export interface Keyed {
  id: string;
  /** A Date, or a time kept as PostgreSQL's text (PgTimeText). */
  createdAt: Pick<Date, 'toISOString'>;
}

export function encodeCursor(row: Keyed): string {
  return Buffer.from(JSON.stringify([row.createdAt.toISOString(), row.id])).toString('base64url');
}

/** `isId` checks the id a cursor carries (UUIDs unless the table says otherwise). */
export function decodeCursor(
  cursor: string,
  isId: (id: unknown) => boolean = isUuid,
): { createdAt: Date; id: string } {
  try {
    const [iso, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string];
    const createdAt = new Date(iso);
    if (typeof id !== 'string' || !isId(id) || Number.isNaN(createdAt.getTime()))
      throw new Error('bad cursor');
    return { createdAt, id };
  } catch {
    throw AppError.validation({ cursor: 'is not a cursor this service issued' });
  }
}

export function pageSize(first: number | null | undefined): number {
  if (first === undefined || first === null) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE_SIZE) {
    throw AppError.validation({ first: `must be an integer between 1 and ${MAX_PAGE_SIZE}` });
  }
  return first;
}

/** Keyset pagination, newest first: stable under inserts, one indexed query per page. */
export async function findPage<T extends Keyed>(
  em: EntityManager,
  entity: EntityName<T>,
  where: FilterQuery<T>,
  args: PageArgs,
  options: { populate?: readonly string[]; isId?: (id: unknown) => boolean } = {},
): Promise<Page<T>> {
  const limit = pageSize(args.first);
  let filter = where;
  if (args.after) {
    const { createdAt, id } = decodeCursor(args.after, options.isId);
    filter = {
      $and: [where, { $or: [{ createdAt: { $lt: createdAt } }, { createdAt, id: { $lt: id } }] }],
    } as FilterQuery<T>;
  }
  const rows = await em.find(entity, filter, {
    populate: options.populate,
    orderBy: { createdAt: 'desc', id: 'desc' },
    limit: limit + 1,
  } as FindOptions<T>);
  const items = rows.slice(0, limit) as T[];
  return {
    items,
    hasNextPage: rows.length > limit,
    endCursor: items.length ? encodeCursor(items[items.length - 1]) : null,
  };
}

export function mapPage<T, U>(page: Page<T>, fn: (item: T) => U): Page<U> {
  return { ...page, items: page.items.map(fn) };
}
