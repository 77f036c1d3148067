/** `YYYY-MM-DDTHH:MM:SS.sssZ`: what Date#toISOString and the GraphQL DateTime scalar print. */
const UTC_ISO = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(?:\.(\d+))?Z$/;

/**
 * Go's default time format in UTC, as the legacy REST answers carry it:
 * `2026-11-22 10:15:03.123 +0000 UTC` (fraction without trailing zeros, no dot when zero).
 * Takes a Date, or the UTC ISO text GraphQL answers carry (reformatted without a Date: the REST
 * lists print one per item).
 */
export function goTime(time: Date | string): string {
  const text = typeof time === 'string' ? time : isoTime(time);
  if (isMillisIso(text)) {
    // The form isoTime and the DateTime scalar print, read by position and written as one flat
    // string (slices joined by + left a rope of five pieces that JSON.stringify copied again).
    const digits =
      text.charCodeAt(22) !== 48 ? 3 : text.charCodeAt(21) !== 48 ? 2 : text.charCodeAt(20) !== 48 ? 1 : 0;
    return goMillis(text, digits);
  }
  const m = UTC_ISO.exec(text);
  if (!m) return goTime(new Date(time)); // another offset: through a Date, to UTC
  const fraction = (m[3] ?? '').replace(/0+$/, '');
  return `${m[1]} ${m[2]}${fraction ? `.${fraction}` : ''} +0000 UTC`;
}

/**
 * goTime's character codes for 0 to 3 digits of fraction: `YYYY-MM-DD HH:MM:SS` (filled in per
 * call), `.` and the digits when any, then ` +0000 UTC`. Reused: goMillis is synchronous.
 */
const GO_CODES = [0, 1, 2, 3].map((digits) => {
  const codes = new Array<number>(19).fill(32);
  if (digits) codes.push(46, ...new Array<number>(digits).fill(48));
  for (const ch of ' +0000 UTC') codes.push(ch.charCodeAt(0));
  return codes;
});

/** goTime of a `YYYY-MM-DDTHH:MM:SS.sssZ` text keeping `digits` (0 to 3) of its fraction. */
function goMillis(t: string, digits: number): string {
  const codes = GO_CODES[digits];
  for (let i = 0; i < 19; i++) if (i !== 10) codes[i] = t.charCodeAt(i); // 10: the space for `T`
  for (let i = 20; i < 20 + digits; i++) codes[i] = t.charCodeAt(i);
  return String.fromCharCode.apply(null, codes);
}

/** `YYYY-MM-DDTHH:MM:SS.sssZ` exactly, digits where digits go. */
function isMillisIso(s: string): boolean {
  if (s.length !== 24) return false;
  for (let i = 0; i < 24; i++) {
    const c = s.charCodeAt(i);
    const want = ISO_SHAPE.charCodeAt(i);
    if (want === 57 /* 9: a digit */ ? c < 48 || c > 57 : c !== want) return false;
  }
  return true;
}
const ISO_SHAPE = '9999-99-99T99:99:99.999Z';

const two = (n: number) => (n < 10 ? `0${n}` : `${n}`);
const three = (n: number) => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`);
const DAY_MS = 86_400_000;
/** 10000-01-01T00:00:00Z: from there on (and before 1970) toISOString's own form is used. */
const YEAR_10000_MS = 253_402_300_800_000;

/**
 * Date#toISOString's text, computed from the time value: about twice as fast as V8's, which
 * matters where a page of results prints hundreds of times. Civil date from the day number as in
 * Howard Hinnant's `civil_from_days`.
 */
export function isoTime(date: Date): string {
  const ms = date.getTime();
  if (!(ms >= 0 && ms < YEAR_10000_MS)) return date.toISOString(); // and its RangeError if invalid
  const days = Math.floor(ms / DAY_MS);
  let rest = ms - days * DAY_MS;
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = Math.floor(rest / 1000);
  return `${year}-${two(month)}-${two(day)}T${two(hours)}:${two(minutes)}:${two(seconds)}.${three(rest - seconds * 1000)}Z`;
}

/** Waits `ms` without holding the process open (a retry's pause must not delay an exit). */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Pauses (as `pause`) that a stop or a close cuts short all at once: wakeAll(). */
export class Pauses {
  private readonly waking = new Set<() => void>();

  pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.waking.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms).unref();
      this.waking.add(wake);
    });
  }

  wakeAll(): void {
    for (const wake of [...this.waking]) wake();
  }
}

/**
 * A timestamptz as the ORM's driver hands it over (text), or a Date, as a Date. PostgreSQL's text
 * in UTC (`2026-11-22 10:15:03.123456+00`, the fraction optional) is read by position, without
 * Date's general parser (a list reads hundreds of times per page); anything else goes to it.
 */
export function pgTime(value: unknown): Date {
  if (value instanceof Date) return value;
  const s = value as string;
  const n = s.length;
  if (
    n < 22 ||
    s.charCodeAt(n - 3) !== 43 /* + */ ||
    s.charCodeAt(n - 2) !== 48 ||
    s.charCodeAt(n - 1) !== 48
  )
    return new Date(s);
  const num = (from: number, to: number) => {
    let v = 0;
    for (let i = from; i < to; i++) v = v * 10 + s.charCodeAt(i) - 48;
    return v;
  };
  const ms = n > 23 ? num(20, Math.min(n - 3, 23)) * 10 ** (3 - (Math.min(n - 3, 23) - 20)) : 0;
  const year = num(0, 4);
  const date = new Date(Date.UTC(year, num(5, 7) - 1, num(8, 10), num(11, 13), num(14, 16), num(17, 19), ms));
  if (year < 100) date.setUTCFullYear(year); // Date.UTC takes years 0 to 99 as 1900 to 1999
  return date;
}

/** PostgreSQL's UTC text, `YYYY-MM-DD HH:MM:SS` then an optional fraction of 1 to 6 digits, `+00`. */
function isPgUtc(s: string): boolean {
  const n = s.length;
  if (n !== 22 && (n < 24 || n > 29)) return false;
  if (s.charCodeAt(n - 3) !== 43 /* + */ || s.charCodeAt(n - 2) !== 48 || s.charCodeAt(n - 1) !== 48)
    return false;
  for (let i = 0; i < n - 3; i++) {
    const c = s.charCodeAt(i);
    const want = i < 19 ? PG_SHAPE.charCodeAt(i) : i === 19 ? 46 /* . */ : 57;
    if (want === 57 ? c < 48 || c > 57 : c !== want) return false;
  }
  return true;
}
const PG_SHAPE = '9999-99-99 99:99:99';

/**
 * A timestamptz's ISO text (what the DateTime scalar and isoTime print: `pgTime`'s Date printed
 * by toISOString), cut from PostgreSQL's UTC text without a Date: the fraction cut or padded to
 * milliseconds, as the Date keeps it. Any other form goes through the Date.
 */
export function pgIsoTime(value: unknown): string {
  if (typeof value !== 'string' || !isPgUtc(value)) return isoTime(pgTime(value));
  const s = value;
  const end = s.length - 3; // the fraction's digits end before `+00`
  // Written as one flat string: slices joined by + left five intermediate strings per time, and
  // a rope that JSON.stringify copied flat once more.
  return String.fromCharCode(
    s.charCodeAt(0),
    s.charCodeAt(1),
    s.charCodeAt(2),
    s.charCodeAt(3),
    45, // -
    s.charCodeAt(5),
    s.charCodeAt(6),
    45,
    s.charCodeAt(8),
    s.charCodeAt(9),
    84, // T
    s.charCodeAt(11),
    s.charCodeAt(12),
    58, // :
    s.charCodeAt(14),
    s.charCodeAt(15),
    58,
    s.charCodeAt(17),
    s.charCodeAt(18),
    46, // .
    fractionDigit(s, 20, end),
    fractionDigit(s, 21, end),
    fractionDigit(s, 22, end), // milliseconds
    90, // Z
  );
}

/** The character code of the fraction's digit at `i`, or 0 where the fraction is shorter. */
function fractionDigit(s: string, i: number, end: number): number {
  return i < end ? s.charCodeAt(i) : 48;
}

/**
 * A time kept as the text PostgreSQL sent (for rows whose times are only printed): printed by
 * `toISOString` as a Date of it would print (the DateTime scalar and cursors call it), without
 * making the Date.
 */
export class PgTimeText {
  constructor(readonly text: unknown) {}

  toISOString(): string {
    return pgIsoTime(this.text);
  }

  toJSON(): string {
    return this.toISOString();
  }
}
