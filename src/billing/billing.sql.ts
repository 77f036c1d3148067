import type { Owner } from '../common/principal';

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
 * `[a, b)`, clipped to the window `[start, asOf)`; `b` is never before `a`, even if clocks of
 * two processes disagreed about a start and an end.
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
  const columns = sql`machine_type, model_id, machine_count::bigint as weight,
      greatest(started_at, ${s}) as a,
      greatest(least(coalesce(finished_at, ${e}), ${e}), started_at, ${s}) as b`;
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
  const columns = sql`bytes as weight, greatest(live_from, ${s}) as a,
      greatest(least(coalesce(live_until, ${e}), ${e}), live_from, ${s}) as b`;
  return sql`
    select ${columns} from media_storage
    where owner_type = ${owner.type} and owner_id = ${owner.id} and live_until is null and live_from < ${e}
    union all
    select ${columns} from media_storage
    where owner_type = ${owner.type} and owner_id = ${owner.id} and live_until is not null
      and live_until > ${s} and live_from < ${e}`;
}

/** One row of `spanSums` (numbers as PostgreSQL's text). */
export interface SpanSumRow {
  /** 1-based buckets of the intervals' starts and ends. */
  first: number;
  last: number;
  /** How many intervals (for jobs: jobs that ran in the window, each counted once). */
  count: number;
  /** Sum of their weights. */
  weight: string;
  /** Sums of weight x seconds from the window's start to each interval's start and end. */
  from_start: string;
  to_end: string;
  machine_type?: string;
  model_id?: string;
}

/** Columns of job intervals that sums may be grouped by. */
export type GroupKey = 'machine_type' | 'model_id';

/**
 * Sums intervals per group of (`keys`, bucket of the start, bucket of the end). `bucketStarts`
 * are ascending, the first is the window's start, all are before `asOf`. That is all
 * `integrate` needs to spread weight x time over the buckets, however many a long interval spans.
 * With `fewWeights` (machine counts) intervals are summed per weight and multiplied once per
 * group, in exact integer interval arithmetic; otherwise (bytes) each row is multiplied.
 */
export function spanSums(
  intervals: Statement,
  w: Window,
  bucketStarts: Date[],
  keys: GroupKey[],
  fewWeights: boolean,
): Statement {
  const s = sql`${w.start.toISOString()}::timestamptz`;
  const bounds = boundsSql(bucketStarts);
  const columns = raw(
    keys.map((k) => (k === 'model_id' ? 'model_id::text as model_id, ' : `${k}, `)).join(''),
  );
  const groups = raw([...keys, ...(fewWeights ? ['weight'] : []), 'first', 'last'].join(', '));
  const sums = fewWeights
    ? sql`(count(*) * weight)::text as weight,
        (weight * extract(epoch from sum(a - ${s})))::text as from_start,
        (weight * extract(epoch from sum(b - ${s})))::text as to_end`
    : sql`sum(weight)::text as weight,
        sum(weight * extract(epoch from a - ${s}))::text as from_start,
        sum(weight * extract(epoch from b - ${s}))::text as to_end`;
  return sql`
    select ${columns}width_bucket(a, ${bounds}) as first, width_bucket(b, ${bounds}) as last,
      count(*)::int as count, ${sums}
    from (${intervals}) iv group by ${groups}`;
}

/**
 * Jobs still running during the window (`finished_at` null, in `jobs_billing_long_index`): the
 * only jobs the rollup does not hold yet.
 */
export function runningIntervals({ owner, start, asOf }: Window): Statement {
  const s = sql`${start.toISOString()}::timestamptz`;
  const e = sql`${asOf.toISOString()}::timestamptz`;
  return sql`
    select machine_type, model_id, machine_count::bigint as weight, greatest(started_at, ${s}) as a,
      greatest(${e}, started_at, ${s}) as b
    from jobs
    where owner_type = ${owner.type} and owner_id = ${owner.id} and started_at is not null
      and finished_at is null and started_at < ${e}`;
}

/**
 * The `spend_daily` rollup as `spanSums` rows: each day's machine-seconds in its bucket (a day
 * lies in one bucket: buckets are whole days or months), `count` the jobs that started that day.
 * Also one row per key of the ended jobs that started before the window and ran into it (their
 * time is in the rollup's days; only their count is missing). `[start, stop)` are whole UTC days.
 */
export function rollupSums(
  owner: Owner,
  start: Date,
  stop: Date,
  bucketStarts: Date[],
  keys: GroupKey[],
): Statement {
  const s = sql`${start.toISOString()}::timestamptz`;
  const bounds = boundsSql(bucketStarts);
  const columns = raw(
    keys.map((k) => (k === 'model_id' ? 'model_id::text as model_id, ' : `${k}, `)).join(''),
  );
  const groupBy = (last: string[]) => {
    const names = [...keys, ...last];
    return raw(names.length ? `group by ${names.join(', ')}` : '');
  };
  const spanning = sql`
    select ${columns}1 as first, 1 as last, count(*)::int as count, '0' as weight, '0' as from_start, '0' as to_end
    from jobs where owner_type = ${owner.type} and owner_id = ${owner.id} and started_at is not null
      and started_at < ${s} and finished_at > ${s}
      and (started_at > ${s} - interval '1 day' and finished_at - started_at < interval '1 day'
           or finished_at - started_at >= interval '1 day')
    ${groupBy([])} having count(*) > 0`;
  return sql`
    select ${columns}bucket as first, bucket as last, sum(jobs)::int as count, '0' as weight,
      '0' as from_start, sum(machine_seconds)::text as to_end
    from (select *, width_bucket(day::timestamp at time zone 'UTC', ${bounds}) as bucket from spend_daily
          where owner_type = ${owner.type} and owner_id = ${owner.id}
            and day >= ${start.toISOString().slice(0, 10)}::date and day < ${stop.toISOString().slice(0, 10)}::date) d
    ${groupBy(['bucket'])}
    union all ${spanning}`;
}

/**
 * Storage from its rollup as `spanSums` rows (`[start, stop)` whole UTC days, buckets whole days
 * or months): the ended spans' byte-seconds of each day in its bucket, and the open spans of
 * each day they opened on (one row for those opened before the window) from their start to
 * `asOf`. Rows per day, whatever the number of files.
 */
export function storageRollupSums(w: Window, stop: Date, bucketStarts: Date[]): Statement {
  const { owner } = w;
  const s = sql`${w.start.toISOString()}::timestamptz`;
  const e = sql`${w.asOf.toISOString()}::timestamptz`;
  const bounds = boundsSql(bucketStarts);
  const at = raw(`(day::timestamp at time zone 'UTC')`);
  return sql`
    select width_bucket(${at}, ${bounds}) as first, width_bucket(${at}, ${bounds}) as last, 0 as count,
      '0' as weight, '0' as from_start, byte_seconds::text as to_end
    from storage_daily
    where owner_type = ${owner.type} and owner_id = ${owner.id}
      and day >= ${w.start.toISOString().slice(0, 10)}::date and day < ${stop.toISOString().slice(0, 10)}::date
    union all
    select first, width_bucket(${e}, ${bounds}) as last, 0 as count, sum(bytes)::text as weight,
      sum(from_start)::text as from_start, (sum(bytes) * extract(epoch from ${e} - ${s}))::text as to_end
    from (select case when ${at} < ${s} then 1 else width_bucket(${at}, ${bounds}) end as first, bytes,
            case when ${at} < ${s} then 0 else byte_seconds_in + bytes * extract(epoch from ${at} - ${s}) end as from_start
          from storage_open
          where owner_type = ${owner.type} and owner_id = ${owner.id} and ${at} < ${e} and bytes <> 0) o
    group by first`;
}

/** Bucket starts as a timestamptz[] for `width_bucket`. */
function boundsSql(bucketStarts: Date[]): Statement {
  return sql`${`{${bucketStarts.map((d) => d.toISOString()).join(',')}}`}::timestamptz[]`;
}
