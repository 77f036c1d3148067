import { amountOf, GB_MONTH, integrate } from './billing.meter';
import { bucketsOf } from './billing.period';

const at = (iso: string) => new Date(iso);
const HOUR = 3_600_000_000n; // microseconds

describe('integrate', () => {
  const period = { start: at('2026-10-01T00:00:00Z'), end: at('2026-10-04T00:00:00Z') };
  const days = bucketsOf(period, 'day');
  const whole = [period];

  it('adds an interval inside one bucket there', () => {
    // 2 machines, 01:00 to 03:00 and 05:00 to 06:00 on Oct 2
    const span = {
      first: 2,
      last: 2,
      weight: 4n,
      fromStart: 2n * (25n + 29n) * HOUR,
      toEnd: 2n * (27n + 30n) * HOUR,
    };
    expect(integrate(days, period.end, [span])).toEqual([0n, 6n * HOUR, 0n]);
    expect(integrate(whole, period.end, [{ ...span, first: 1, last: 1 }])).toEqual([6n * HOUR]);
  });

  it('spreads an interval over the buckets it spans', () => {
    // weight 2 from Oct 1 22:00 to Oct 3 01:00
    const span = { first: 1, last: 3, weight: 2n, fromStart: 2n * 22n * HOUR, toEnd: 2n * 49n * HOUR };
    expect(integrate(days, period.end, [span])).toEqual([4n * HOUR, 48n * HOUR, 2n * HOUR]);
  });

  it('counts nothing after asOf', () => {
    // running since Oct 2 12:00, clipped at asOf Oct 3 06:00
    const asOf = at('2026-10-03T06:00:00Z');
    const span = { first: 2, last: 3, weight: 1n, fromStart: 36n * HOUR, toEnd: 54n * HOUR };
    expect(integrate(days, asOf, [span])).toEqual([0n, 12n * HOUR, 6n * HOUR]);
    const early = at('2026-10-02T06:00:00Z');
    expect(
      integrate(days, early, [{ first: 1, last: 2, weight: 1n, fromStart: 0n, toEnd: 30n * HOUR }]),
    ).toEqual([24n * HOUR, 6n * HOUR, 0n]);
  });

  it('ends an interval at a bucket boundary without a share of the next bucket', () => {
    const span = { first: 1, last: 2, weight: 3n, fromStart: 3n * 12n * HOUR, toEnd: 3n * 24n * HOUR };
    expect(integrate(days, period.end, [span])).toEqual([36n * HOUR, 0n, 0n]);
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
