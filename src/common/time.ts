/** `YYYY-MM-DDTHH:MM:SS.sssZ`: what Date#toISOString and the GraphQL DateTime scalar print. */
const UTC_ISO = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(?:\.(\d+))?Z$/;

/**
 * Go's default time format in UTC, as the legacy REST answers carry it:
 * `2026-11-22 10:15:03.123 +0000 UTC` (fraction without trailing zeros, no dot when zero).
 * Takes a Date, or the UTC ISO text GraphQL answers carry (reformatted without a Date: the REST
 * lists print one per item).
 */
export function goTime(time: Date | string): string {
  const m = UTC_ISO.exec(typeof time === 'string' ? time : time.toISOString());
  if (!m) return goTime(new Date(time)); // another offset: through a Date, to UTC
  const fraction = (m[3] ?? '').replace(/0+$/, '');
  return `${m[1]} ${m[2]}${fraction ? `.${fraction}` : ''} +0000 UTC`;
}

/** Waits `ms` without holding the process open (a retry's pause must not delay an exit). */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
