/**
 * Exact decimal arithmetic on bigints. Money never touches a binary float: prices are parsed
 * from their text, quantities arrive from PostgreSQL as numeric text, amounts are integers of
 * the currency's minor unit.
 */

/** A non-negative decimal: `units / 10^scale` (`0.0008` is `{units: 8n, scale: 4}`). */
export interface Decimal {
  units: bigint;
  scale: number;
}

/** Decimals a price may have. */
export const MAX_PRICE_DECIMALS = 12;
const PLAIN_DECIMAL = new RegExp(`^(\\d{1,15})(?:\\.(\\d{1,${MAX_PRICE_DECIMALS}}))?$`);

/**
 * A plain non-negative decimal (`12`, `0.0008`) of at most 15 integer digits and
 * MAX_PRICE_DECIMALS decimals, or null; no signs, exponents or separators.
 */
export function parseDecimal(text: string): Decimal | null {
  const m = PLAIN_DECIMAL.exec(text);
  if (!m) return null;
  const fraction = m[2] ?? '';
  return { units: BigInt(m[1] + fraction), scale: fraction.length };
}

/** `units / 10^scale` with exactly `scale` decimals, or with trailing zeros removed when `trim`. */
export function formatScaled(units: bigint, scale: number, trim = false): string {
  const sign = units < 0n ? '-' : '';
  const digits = (units < 0n ? -units : units).toString().padStart(scale + 1, '0');
  let fraction = digits.slice(digits.length - scale);
  if (trim) fraction = fraction.replace(/0+$/, '');
  return `${sign}${digits.slice(0, digits.length - scale)}${fraction ? `.${fraction}` : ''}`;
}

export function formatDecimal(d: Decimal): string {
  return formatScaled(d.units, d.scale);
}

/** Microseconds in a second: quantities are kept in weight x microseconds. */
export const MICROS = 1_000_000n;

/** A numeric from PostgreSQL (at most 6 decimals, maybe negative) in millionths. */
export function parseMicros(text: string): bigint {
  const m = /^(-?)(\d+)(?:\.(\d{1,6}))?$/.exec(text);
  if (!m) throw new Error(`not a numeric with at most 6 decimals: ${text}`);
  const value = BigInt(m[2]) * MICROS + BigInt((m[3] ?? '').padEnd(6, '0'));
  return m[1] ? -value : value;
}

/** `num / den` rounded half up (half away from zero for these non-negative amounts). */
export function divRound(num: bigint, den: bigint): bigint {
  if (num < 0n) return -divRound(-num, den);
  return (2n * num + den) / (2n * den);
}

/**
 * Splits `total` in proportion to `weights` (largest remainder): the parts are integers and add
 * up to exactly `total`, so a series or a breakdown always sums to the invoiced line. Ties go to
 * the earlier part. Without any weight, everything goes to the first part.
 */
export function allocate(total: bigint, weights: bigint[]): bigint[] {
  if (!weights.length) return [];
  const sum = weights.reduce((a, w) => a + (w > 0n ? w : 0n), 0n);
  if (sum === 0n) return weights.map((_, i) => (i === 0 ? total : 0n));
  const exact = weights.map((w) => total * (w > 0n ? w : 0n));
  const parts = exact.map((e) => e / sum);
  let left = total - parts.reduce((a, p) => a + p, 0n);
  const byRemainder = exact
    .map((e, i) => ({ i, r: e % sum }))
    .sort((a, b) => (b.r > a.r ? 1 : b.r < a.r ? -1 : a.i - b.i));
  for (const { i } of byRemainder) {
    if (left <= 0n) break;
    parts[i] += 1n;
    left -= 1n;
  }
  return parts;
}
