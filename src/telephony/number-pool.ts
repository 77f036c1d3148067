import type { EntityManager } from '@mikro-orm/postgresql';
import type { NumberRange } from '../config';

export type PoolColumn = 'phone_number' | 'extension';

/**
 * The first value of a pool (ranges in configured order, each ascending) that no assignment
 * holds in `column`, or null when the pool is exhausted. Free values are either a range's start
 * or one past an assigned value, so the query walks the assigned rows of the pool's ranges with
 * the unique index and never materialises the ranges themselves.
 */
export async function firstFreeValue(
  em: EntityManager,
  column: PoolColumn,
  ranges: readonly NumberRange[],
): Promise<string | null> {
  if (!ranges.length) return null;
  const pool = JSON.stringify(ranges.map((r, i) => ({ lo: r.from, hi: r.to, ord: i })));
  const rows = await em.execute<{ value: string }[]>(
    `with pool as (select * from jsonb_to_recordset(?::jsonb) as p(lo bigint, hi bigint, ord int))
     select c::text as value from (
       select p.ord, p.lo as c from pool p
        where not exists (select 1 from number_assignments a where a.${column} = p.lo)
       union all
       select p.ord, a.${column} + 1 from pool p
         join number_assignments a on a.${column} >= p.lo and a.${column} < p.hi
        where not exists (select 1 from number_assignments b where b.${column} = a.${column} + 1)
     ) free order by ord, c limit 1`,
    [pool],
  );
  return rows[0]?.value ?? null;
}
