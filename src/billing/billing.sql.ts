import type { Owner } from '../auth/principal';

/** A statement with `?` placeholders (knex's, which the ORM's `execute` takes) and its values. */
export interface Statement {
  text: string;
  values: unknown[];
}

/** sql`... ${value} ...`: values become placeholders; a nested Statement is inlined. */
export function sql(strings: TemplateStringsArray, ...values: unknown[]): Statement {
  let text = strings[0];
  const out: unknown[] = [];
  values.forEach((v, i) => {
    if (isStatement(v)) {
      text += v.text;
      out.push(...v.values);
    } else {
      text += '?';
      out.push(v);
    }
    text += strings[i + 1];
  });
  return { text, values: out };
}

/** Trusted SQL text (column names chosen by the code), inlined as is. */
export function raw(text: string): Statement {
  return { text, values: [] };
}

function isStatement(v: unknown): v is Statement {
  return typeof v === 'object' && v !== null && 'text' in v && 'values' in v;
}

/**
 * Billing reads each job and each stored file as an interval: a weight (machines, bytes) over
 * `[a, b)`, clipped to the period `[start, asOf)`. Both queries keep their index scans bounded.
 */
export interface Window {
  owner: Owner;
  start: Date;
  /** The period's end, or now if that is earlier: running jobs and live files count up to it. */
  asOf: Date;
}

/**
 * Jobs that ran during the window. A job counts from `started_at` (null: it never ran, it costs
 * nothing) to `finished_at`, or to `asOf` while it runs. Jobs shorter than a day are found
 * between a day before the window and its end (`jobs_billing_started_index`); longer and
 * running jobs in their own small partial index (`jobs_billing_long_index`).
 */
export function jobIntervals({ owner, start, asOf }: Window): Statement {
  const s = sql`${start.toISOString()}::timestamptz`;
  const e = sql`${asOf.toISOString()}::timestamptz`;
  const columns = sql`machine_type, model_id::text as model_id, machine_count::bigint as weight,
      greatest(started_at, ${s}) as a, least(coalesce(finished_at, ${e}), ${e}) as b`;
  return sql`
    select ${columns} from jobs
    where owner_type = ${owner.type} and owner_id = ${owner.id} and started_at is not null
      and started_at > ${s} - interval '1 day' and started_at < ${e}
      and finished_at - started_at < interval '1 day'
      and (started_at >= ${s} or finished_at > ${s})
    union all
    select ${columns} from jobs
    where owner_type = ${owner.type} and owner_id = ${owner.id} and started_at is not null
      and (finished_at is null or finished_at - started_at >= interval '1 day')
      and started_at < ${e}
      and (started_at >= ${s} or finished_at is null or finished_at > ${s})`;
}

/**
 * Bytes stored during the window, from the `media_storage` ledger: files still live (partial
 * index on open intervals) and files removed after the window started (on closed ones).
 */
export function storageIntervals({ owner, start, asOf }: Window): Statement {
  const s = sql`${start.toISOString()}::timestamptz`;
  const e = sql`${asOf.toISOString()}::timestamptz`;
  const columns = sql`bytes as weight, greatest(live_from, ${s}) as a, least(coalesce(live_until, ${e}), ${e}) as b`;
  return sql`
    select ${columns} from media_storage
    where owner_type = ${owner.type} and owner_id = ${owner.id} and live_until is null and live_from < ${e}
    union all
    select ${columns} from media_storage
    where owner_type = ${owner.type} and owner_id = ${owner.id} and live_until is not null
      and live_until > ${s} and live_from < ${e}`;
}

/** One row of `bucketSums` (numbers as PostgreSQL's text); `bucket` is 1-based. */
export interface BucketSumRow {
  bucket: number;
  /** Intervals that begin in the bucket (for jobs: the jobs that ran, counted once). */
  starts: number;
  /** Change of the running weight across the bucket. */
  delta: string;
  /** Sum of weight x seconds from each interval edge in the bucket to the bucket's end. */
  weighted: string;
  machine_type?: string;
  model_id?: string;
}

/** Columns of job intervals that sums may be grouped by. */
export type GroupKey = 'machine_type' | 'model_id';

/**
 * Turns intervals into edges (+weight at `a`, -weight at `b` when it ends inside the window) and
 * sums them per bucket and key. With `bucketStarts` (ascending, the first the window's start,
 * all before `asOf`), weight x time per bucket is `running weight x bucket length + weighted`
 * (see `integrate`): one pass over the rows, however many buckets a long interval spans.
 */
export function bucketSums(
  intervals: Statement,
  w: Window,
  bucketStarts: Date[],
  keys: GroupKey[],
): Statement {
  const e = sql`${w.asOf.toISOString()}::timestamptz`;
  const bounds = sql`${`{${bucketStarts.map((d) => d.toISOString()).join(',')}}`}::timestamptz[]`;
  const k = raw(keys.map((key) => `${key}, `).join(''));
  return sql`
    with iv as (${intervals}),
    edges as (
      select ${k}a as t, weight as d, 1 as n from iv
      union all
      select ${k}greatest(a, b) as t, -weight as d, 0 as n from iv where b < ${e}
    ),
    bucketed as (select width_bucket(t, ${bounds}) as bucket, * from edges)
    select ${k}bucket, sum(n)::int as starts, sum(d)::text as delta,
      sum(d * extract(epoch from coalesce((${bounds})[bucket + 1], ${e}) - t))::text as weighted
    from bucketed group by ${k}bucket`;
}
