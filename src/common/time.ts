/**
 * Go's default time format in UTC, as the legacy REST answers carry it:
 * `2026-11-22 10:15:03.123 +0000 UTC` (fraction without trailing zeros, no dot when zero).
 */
export function goTime(date: Date): string {
  const iso = date.toISOString(); // 2026-11-22T10:15:03.120Z
  const [day, rest] = iso.slice(0, -1).split('T');
  const [hms, fraction = ''] = rest.split('.');
  const trimmed = fraction.replace(/0+$/, '');
  return `${day} ${hms}${trimmed ? `.${trimmed}` : ''} +0000 UTC`;
}
