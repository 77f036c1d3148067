import { GraphQLDateTimeISO } from 'graphql-scalars';
import { goTime, isCanonicalIso, isoTime } from './time';

describe('isoTime', () => {
  it('prints what toISOString prints, over the years 1970 to 9999', () => {
    const samples = [0, 951_782_400_000, 4_107_542_400_000, 253_402_300_799_999];
    for (let i = 0; i < 100_000; i++) samples.push(Math.floor(Math.random() * 253_402_300_800_000));
    for (const ms of samples) expect(isoTime(new Date(ms))).toBe(new Date(ms).toISOString());
  });

  it("falls back to toISOString's own form outside them, and refuses an invalid date alike", () => {
    for (const iso of [
      '1969-12-31T23:59:59.999Z',
      '+010000-01-01T00:00:00.000Z',
      '-000001-06-01T00:00:00.000Z',
    ])
      expect(isoTime(new Date(iso))).toBe(iso);
    expect(() => isoTime(new Date(NaN))).toThrow(RangeError);
  });
});

describe('goTime', () => {
  it('prints UTC with the fraction trimmed of trailing zeros', () => {
    expect(goTime(new Date('2026-11-22T10:15:03.120Z'))).toBe('2026-11-22 10:15:03.12 +0000 UTC');
    expect(goTime(new Date('2026-01-02T00:00:09.007Z'))).toBe('2026-01-02 00:00:09.007 +0000 UTC');
  });

  it('omits the dot when the fraction is zero', () => {
    expect(goTime(new Date('2026-11-22T10:15:03.000Z'))).toBe('2026-11-22 10:15:03 +0000 UTC');
  });

  it('converts other offsets to UTC', () => {
    expect(goTime(new Date('2026-11-22T01:00:00.5+02:00'))).toBe('2026-11-21 23:00:00.5 +0000 UTC');
  });
});

describe('goTime of ISO text', () => {
  it('reformats UTC ISO text without going through a Date', () => {
    expect(goTime('2026-11-22T10:15:03.120Z')).toBe('2026-11-22 10:15:03.12 +0000 UTC');
    expect(goTime('2026-11-22T10:15:03.000Z')).toBe('2026-11-22 10:15:03 +0000 UTC');
    expect(goTime('2026-11-22T10:15:03Z')).toBe('2026-11-22 10:15:03 +0000 UTC');
  });

  it('converts text with another offset to UTC', () => {
    expect(goTime('2026-11-22T01:00:00.5+02:00')).toBe('2026-11-21 23:00:00.5 +0000 UTC');
  });
});

describe('goTime by position', () => {
  /** What goTime printed before it read the usual form by position: the regular expression alone. */
  const byPattern = (iso: string) => {
    const m = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(?:\.(\d+))?Z$/.exec(iso)!;
    const fraction = (m[3] ?? '').replace(/0+$/, '');
    return `${m[1]} ${m[2]}${fraction ? `.${fraction}` : ''} +0000 UTC`;
  };

  it('prints what the pattern printed, for 100,000 random times and every fraction', () => {
    const times = Array.from({ length: 100_000 }, () => Math.floor(Math.random() * 4_102_444_800_000));
    for (let ms = 0; ms < 1000; ms++) times.push(Date.UTC(2026, 10, 24, 6, 0, 0, ms));
    const wrong = times.map((t) => new Date(t).toISOString()).filter((iso) => goTime(iso) !== byPattern(iso));
    expect(wrong).toEqual([]);
  });

  it('leaves text of another shape to the pattern and to Date', () => {
    expect(goTime('2026-11-22T10:15:03.12Z')).toBe('2026-11-22 10:15:03.12 +0000 UTC');
    expect(goTime('2026-11-22T10:15:03.1234Z')).toBe('2026-11-22 10:15:03.1234 +0000 UTC');
    expect(goTime('2026-11-22T01:00:00.500+02:00')).toBe('2026-11-21 23:00:00.5 +0000 UTC');
    expect(() => goTime('2026-11-22T10:15:0x.120Z')).toThrow(RangeError);
  });
});

describe('isCanonicalIso', () => {
  it('holds for what isoTime prints', () => {
    for (let i = 0; i < 20_000; i++) {
      const iso = isoTime(new Date(Math.floor(Math.random() * 253_402_300_800_000)));
      expect(isCanonicalIso(iso)).toBe(true);
    }
    expect(isCanonicalIso('2024-02-29T23:59:59.999Z')).toBe(true);
    expect(isCanonicalIso('2000-02-29T00:00:00.000Z')).toBe(true);
  });

  it('fails other forms and impossible dates, which the DateTime scalar parses as before', () => {
    for (const text of [
      '2026-11-22T10:15:03Z',
      '2026-11-22T10:15:03.12Z',
      '2026-11-22T10:15:03.120+00:00',
      '2026-11-22 10:15:03.120Z',
      '2026-02-29T00:00:00.000Z',
      '1900-02-29T00:00:00.000Z',
      '2026-04-31T00:00:00.000Z',
      '2026-13-01T00:00:00.000Z',
      '2026-00-10T00:00:00.000Z',
      '2026-11-00T00:00:00.000Z',
      '2026-11-22T24:00:00.000Z',
      '2026-11-22T10:60:00.000Z',
      '2026-11-22T10:15:60.000Z',
    ])
      expect(isCanonicalIso(text)).toBe(false);
  });

  it("is text graphql-scalars' DateTimeISO would print as it is", () => {
    for (let i = 0; i < 5_000; i++) {
      const iso = isoTime(new Date(Math.floor(Math.random() * 253_402_300_800_000)));
      expect(GraphQLDateTimeISO.serialize(iso)).toBe(iso);
    }
  });
});
