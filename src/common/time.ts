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
    // The form isoTime and the DateTime scalar print, read by position (no match objects).
    const fraction =
      text.charCodeAt(22) !== 48
        ? text.slice(19, 23)
        : text.charCodeAt(21) !== 48
          ? text.slice(19, 22)
          : text.charCodeAt(20) !== 48
            ? text.slice(19, 21)
            : '';
    return `${text.slice(0, 10)} ${text.slice(11, 19)}${fraction} +0000 UTC`;
  }
  const m = UTC_ISO.exec(text);
  if (!m) return goTime(new Date(time)); // another offset: through a Date, to UTC
  const fraction = (m[3] ?? '').replace(/0+$/, '');
  return `${m[1]} ${m[2]}${fraction ? `.${fraction}` : ''} +0000 UTC`;
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

/**
 * Whether `s` is exactly what isoTime prints for some time: the form, and a real calendar date
 * and time of day. The DateTime scalar passes such text through as it is, where parsing it into
 * a Date and printing it again would give the same text.
 */
export function isCanonicalIso(s: string): boolean {
  if (!isMillisIso(s)) return false;
  const digits = (at: number, n: number) => {
    let v = 0;
    for (let i = at; i < at + n; i++) v = v * 10 + s.charCodeAt(i) - 48;
    return v;
  };
  const year = digits(0, 4);
  const month = digits(5, 2);
  const day = digits(8, 2);
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days =
    month === 2 ? (leap ? 29 : 28) : month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
  return day <= days && digits(11, 2) < 24 && digits(14, 2) < 60 && digits(17, 2) < 60;
}

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
