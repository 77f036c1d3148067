import { divRound, MICROS, type Decimal } from '../common/decimal';
import type { Period } from './billing.period';

/** Storage is priced per GB-month: 10^9 bytes kept for 730 hours (an average month). */
export const BYTES_PER_GB = 1_000_000_000n;
export const SECONDS_PER_MONTH = 730n * 3600n;
/** Byte-seconds in a GB-month. */
export const GB_MONTH = BYTES_PER_GB * SECONDS_PER_MONTH;

/** Intervals grouped by the buckets of their start and end (see `spanSums`), in microseconds. */
export interface Span {
  first: number;
  last: number;
  weight: bigint;
  /** Sum of weight x microseconds from the window's start to each interval's start, and end. */
  fromStart: bigint;
  toEnd: bigint;
}

/**
 * Weight x microseconds per bucket, from intervals clipped to `[buckets[0].start, asOf)`. A group
 * that starts and ends in one bucket adds its length there; otherwise it adds from its start to
 * the end of its first bucket, the whole of the buckets between, and the start of its last
 * bucket to its end. Buckets past `asOf` stay empty.
 */
export function integrate(buckets: Period[], asOf: Date, spans: Span[]): bigint[] {
  const origin = buckets[0].start.getTime();
  const micros = (t: number) => BigInt(t - origin) * 1000n;
  const starts = buckets.map((b) => micros(b.start.getTime()));
  const ends = buckets.map((b) =>
    micros(Math.min(b.end.getTime(), Math.max(asOf.getTime(), b.start.getTime()))),
  );
  const quantity = buckets.map(() => 0n);
  for (const { first, last, weight, fromStart, toEnd } of spans) {
    const [i, j] = [first - 1, last - 1];
    if (i === j) {
      quantity[i] += toEnd - fromStart;
      continue;
    }
    quantity[i] += weight * ends[i] - fromStart;
    for (let k = i + 1; k < j; k++) quantity[k] += weight * (ends[k] - starts[k]);
    quantity[j] += toEnd - weight * starts[j];
  }
  return quantity;
}

/**
 * The amount in minor units of `micros` (weight x microseconds) at `price` per weight-second,
 * divided by `per` (bytes and seconds of a GB-month for storage); rounded half up, once.
 */
export function amountOf(micros: bigint, price: Decimal, minorDigits: number, per = 1n): bigint {
  if (micros <= 0n) return 0n;
  return divRound(
    micros * price.units * 10n ** BigInt(minorDigits),
    MICROS * 10n ** BigInt(price.scale) * per,
  );
}
