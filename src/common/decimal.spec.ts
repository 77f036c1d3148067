import { allocate, divRound, formatScaled, parseDecimal, parseMicros } from './decimal';

describe('decimals', () => {
  it('parses plain decimals exactly, keeping the written scale', () => {
    expect(parseDecimal('0.0008')).toEqual({ units: 8n, scale: 4 });
    expect(parseDecimal('12')).toEqual({ units: 12n, scale: 0 });
    expect(parseDecimal('0.10')).toEqual({ units: 10n, scale: 2 });
    expect(parseDecimal('0.000000000001')).toEqual({ units: 1n, scale: 12 });
  });

  it.each(['', '-1', '+1', '1e-4', '.5', '5.', '1,5', '0x10', ' 1', '0.0000000000001', '1'.repeat(16)])(
    'refuses %j',
    (text) => expect(parseDecimal(text)).toBeNull(),
  );

  it('formats with a fixed scale or without trailing zeros', () => {
    expect(formatScaled(27750n, 2)).toBe('277.50');
    expect(formatScaled(5n, 2)).toBe('0.05');
    expect(formatScaled(0n, 2)).toBe('0.00');
    expect(formatScaled(1234n, 0)).toBe('1234');
    expect(formatScaled(3_600_000_000n, 6, true)).toBe('3600');
    expect(formatScaled(1_500_000n, 6, true)).toBe('1.5');
    expect(formatScaled(-1_500_000n, 6, true)).toBe('-1.5');
  });

  it('reads numerics in millionths', () => {
    expect(parseMicros('3600.000000')).toBe(3_600_000_000n);
    expect(parseMicros('-0.5')).toBe(-500_000n);
    expect(parseMicros('12')).toBe(12_000_000n);
    expect(() => parseMicros('0.0000001')).toThrow();
  });
});

describe('divRound', () => {
  it('rounds half up', () => {
    expect(divRound(905n, 10n)).toBe(91n);
    expect(divRound(904n, 10n)).toBe(90n);
    expect(divRound(125n, 1000n)).toBe(0n);
    expect(divRound(500n, 1000n)).toBe(1n);
    expect(divRound(0n, 7n)).toBe(0n);
  });
});

describe('allocate', () => {
  it('splits in proportion, adding up to the total exactly', () => {
    expect(allocate(100n, [1n, 1n, 1n])).toEqual([34n, 33n, 33n]);
    expect(allocate(91n, [1250n, 600n, 7200n])).toEqual([13n, 6n, 72n]);
    expect(allocate(10n, [0n, 5n, 5n])).toEqual([0n, 5n, 5n]);
  });

  it('gives the remainder to the largest fractions first', () => {
    // 7 x [0.2, 0.3, 0.5] = [1.4, 2.1, 3.5]: floors 1, 2, 3; the one left goes to 3.5.
    expect(allocate(7n, [2n, 3n, 5n])).toEqual([1n, 2n, 4n]);
  });

  it('puts everything in the first part when nothing weighs', () => {
    expect(allocate(3n, [0n, 0n])).toEqual([3n, 0n]);
    expect(allocate(0n, [])).toEqual([]);
  });

  it('always sums to the total', () => {
    for (let seed = 1; seed < 200; seed++) {
      const weights = Array.from({ length: (seed % 7) + 1 }, (_, i) =>
        BigInt((seed * (i + 3) * 7919) % 1000),
      );
      const total = BigInt((seed * 104729) % 100000);
      expect(allocate(total, weights).reduce((a, b) => a + b, 0n)).toBe(total);
    }
  });
});
