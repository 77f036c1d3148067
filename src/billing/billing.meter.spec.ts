import { amountOf, GB_MONTH, integrate } from './billing.meter';
import { bucketsOf } from './billing.period';

const at = (iso: string) => new Date(iso);
const HOUR = 3_600_000_000n; // microseconds

describe('integrate', () => {
  const period = { start: at('2026-10-01T00:00:00Z'), end: at('2026-10-04T00:00:00Z') };
  const days = bucketsOf(period, 'day');

  it('spreads an interval over the buckets it spans', () => {
    // weight 2 from Oct 1 22:00 to Oct 3 01:00: start edge in bucket 1, end edge in bucket 3.
    const sums = [
      { bucket: 1, delta: 2n, weighted: 2n * 2n * HOUR },
      { bucket: 3, delta: -2n, weighted: -2n * 23n * HOUR },
    ];
    expect(integrate(days, period.end, sums)).toEqual([4n * HOUR, 48n * HOUR, 2n * HOUR]);
  });

  it('counts nothing after asOf', () => {
    // running since Oct 2 12:00, asOf Oct 3 06:00 (the edge sums are clipped there too)
    const asOf = at('2026-10-03T06:00:00Z');
    const sums = [{ bucket: 2, delta: 1n, weighted: 12n * HOUR }];
    expect(integrate(days, asOf, sums)).toEqual([0n, 12n * HOUR, 6n * HOUR]);
  });

  it('adds edges of several intervals in the same bucket', () => {
    const sums = [{ bucket: 2, delta: 0n, weighted: 3n * HOUR }];
    expect(integrate(days, period.end, sums)).toEqual([0n, 3n * HOUR, 0n]);
  });
});

describe('amountOf', () => {
  const cpu = { units: 1n, scale: 4 }; // 0.0001 per machine-second

  it('rounds the exact amount half up to the minor unit, once', () => {
    expect(amountOf(9050n * 1_000_000n, cpu, 2)).toBe(91n); // 0.905
    expect(amountOf(9049n * 1_000_000n, cpu, 2)).toBe(90n); // 0.9049
    expect(amountOf(9050n * 1_000_000n, cpu, 0)).toBe(1n); // JPY-like currencies
    expect(amountOf(0n, cpu, 2)).toBe(0n);
  });

  it('prices storage per GB-month of 730 hours', () => {
    const perGbMonth = { units: 10n, scale: 2 }; // 0.10
    const oneGbMonth = 1_000_000_000n * 730n * HOUR;
    expect(amountOf(oneGbMonth, perGbMonth, 2, GB_MONTH)).toBe(10n);
    expect(amountOf(oneGbMonth * 25n, perGbMonth, 2, GB_MONTH)).toBe(250n);
    expect(amountOf(oneGbMonth / 20n, perGbMonth, 2, GB_MONTH)).toBe(1n); // 0.005 -> 0.01
  });
});
