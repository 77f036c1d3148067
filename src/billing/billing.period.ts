import { AppError } from '../common/errors';

/** A half-open span of time `[start, end)`. */
export interface Period {
  start: Date;
  end: Date;
}

export type Granularity = 'day' | 'month';

/** The longest period one query may cover (three years and a leap day). */
export const MAX_PERIOD_DAYS = 1096;
const DAY_MS = 86_400_000;

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;
const FORMAT = 'expected a date (2026-11-01) or a date-time with a zone (2026-11-01T08:00:00Z)';

/**
 * The period of `from`/`to` (ISO 8601, UTC unless a zone is given). A date means its whole UTC
 * day, so `from=2026-11-01&to=2026-11-30` is all of November; `end` is exclusive. Neither given:
 * the calendar month of `now` in UTC.
 */
export function parsePeriod(input: { from?: string | null; to?: string | null }, now: Date): Period {
  const from = input.from || undefined;
  const to = input.to || undefined;
  if (!from && !to) return { start: monthStart(now), end: monthStart(now, 1) };
  if (!from) throw AppError.validation({ from: 'required with to (give both or neither)' });
  if (!to) throw AppError.validation({ to: 'required with from (give both or neither)' });
  const start = parseInstant(from, false);
  const end = parseInstant(to, true);
  const details: Record<string, string> = {};
  if (!start) details.from = FORMAT;
  if (!end) details.to = FORMAT;
  if (start && end) {
    if (end <= start) details.to = 'must be after from (a date includes its whole day)';
    else if (end.getTime() - start.getTime() > MAX_PERIOD_DAYS * DAY_MS)
      details.to = `the period may cover at most ${MAX_PERIOD_DAYS} days`;
  }
  if (Object.keys(details).length) throw AppError.validation(details);
  return { start: start!, end: end! };
}

/** A date (its start, or with `dayEnd` the start of the next day) or a zoned date-time, or null. */
function parseInstant(text: string, dayEnd: boolean): Date | null {
  const d = DATE.exec(text);
  if (d) {
    const [y, m, day] = [Number(d[1]), Number(d[2]), Number(d[3])];
    const t = Date.UTC(y, m - 1, day);
    return validDay(t, y, m, day) ? new Date(t + (dayEnd ? DAY_MS : 0)) : null;
  }
  const dt = DATE_TIME.exec(text);
  if (!dt) return null;
  const [y, m, day, h, min, s] = [1, 2, 3, 4, 5, 6].map((i) => Number(dt[i] ?? 0));
  const ms = Number((dt[7] ?? '').padEnd(3, '0').slice(0, 3));
  const offsetMinutes = dt[9] ? (dt[9] === '-' ? -1 : 1) * (Number(dt[10]) * 60 + Number(dt[11])) : 0;
  if (h > 23 || min > 59 || s > 59 || Number(dt[10] ?? 0) > 23 || Number(dt[11] ?? 0) > 59) return null;
  const day0 = Date.UTC(y, m - 1, day);
  if (!validDay(day0, y, m, day)) return null;
  return new Date(day0 + ((h * 60 + min - offsetMinutes) * 60 + s) * 1000 + ms);
}

function validDay(t: number, y: number, m: number, day: number): boolean {
  const date = new Date(t);
  return (
    y >= 1970 && date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === day
  );
}

/** The first instant of the UTC month of `t`, `months` months later. */
function monthStart(t: Date, months = 0): Date {
  return new Date(Date.UTC(t.getUTCFullYear(), t.getUTCMonth() + months, 1));
}

/** The first UTC day or month boundary after `t`. */
function nextBoundary(t: Date, granularity: Granularity): Date {
  if (granularity === 'month') return monthStart(t, 1);
  return new Date(Math.floor(t.getTime() / DAY_MS) * DAY_MS + DAY_MS);
}

/** The period cut at UTC day or month boundaries; the first and last buckets may be partial. */
export function bucketsOf(period: Period, granularity: Granularity): Period[] {
  const buckets: Period[] = [];
  for (let start = period.start; start < period.end;) {
    const next = nextBoundary(start, granularity);
    const end = next < period.end ? next : period.end;
    buckets.push({ start, end });
    start = end;
  }
  return buckets;
}
