import { divRound, MICROS, type Decimal } from './billing.money';
import type { Period } from './billing.period';

/** Storage is priced per GB-month: 10^9 bytes kept for 730 hours (an average month). */
export const BYTES_PER_GB = 1_000_000_000n;
export const SECONDS_PER_MONTH = 730n * 3600n;
/** Byte-seconds in a GB-month. */
export const GB_MONTH = BYTES_PER_GB * SECONDS_PER_MONTH;

/** The edge sums of one bucket (see `bucketSums`), weighted in weight x microseconds. */
export interface EdgeSums {
  bucket: number;
  delta: bigint;
  weighted: bigint;
}

/**
 * Weight x microseconds per bucket. An interval open across a bucket contributes its weight
 * for the bucket's whole length; edges inside a bucket contribute up to the bucket's end
 * (a start adds, an end subtracts). Buckets past `asOf` are empty.
 */
export function integrate(buckets: Period[], asOf: Date, sums: EdgeSums[]): bigint[] {
  const delta = buckets.map(() => 0n);
  const weighted = buckets.map(() => 0n);
  for (const s of sums) {
    delta[s.bucket - 1] += s.delta;
    weighted[s.bucket - 1] += s.weighted;
  }
  let running = 0n;
  return buckets.map((b, i) => {
    const end = Math.min(b.end.getTime(), asOf.getTime());
    const length = BigInt(Math.max(0, end - b.start.getTime())) * 1000n;
    const quantity = running * length + weighted[i];
    running += delta[i];
    return quantity;
  });
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
