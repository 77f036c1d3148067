import { DateTimeISO } from '../graphql/graphql.scalars';
import { encodeCursor } from './pagination';
import { goTime, isoTime, Pauses, pgIsoTime, pgTime, PgTimeText } from './time';

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

describe('pgTime', () => {
  it('reads PostgreSQL timestamptz text in UTC to the millisecond', () => {
    expect(pgTime('2026-11-22 10:15:03+00').toISOString()).toBe('2026-11-22T10:15:03.000Z');
    expect(pgTime('2026-11-22 10:15:03.1+00').toISOString()).toBe('2026-11-22T10:15:03.100Z');
    expect(pgTime('2026-11-22 10:15:03.123456+00').toISOString()).toBe('2026-11-22T10:15:03.123Z');
    expect(pgTime('1999-01-01 00:00:00.05+00').toISOString()).toBe('1999-01-01T00:00:00.050Z');
    expect(pgTime('0099-03-01 00:00:00+00').toISOString()).toBe('0099-03-01T00:00:00.000Z');
  });

  it('leaves other zones and Dates to the general parser', () => {
    expect(pgTime('2026-11-22 12:15:03.5+02').toISOString()).toBe('2026-11-22T10:15:03.500Z');
    expect(pgTime('2026-11-22 05:45:03+05:30').toISOString()).toBe('2026-11-22T00:15:03.000Z');
    const d = new Date();
    expect(pgTime(d)).toBe(d);
  });
});

describe('pgIsoTime', () => {
  /** PostgreSQL's text of a time in UTC with `digits` of fraction (its microseconds made up). */
  const pgText = (ms: number, digits: number) => {
    const iso = new Date(ms).toISOString();
    const micros = `${iso.slice(20, 23)}${String(ms % 997).padStart(3, '0')}`.slice(0, digits);
    return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${digits ? `.${micros}` : ''}+00`;
  };

  it("prints what pgTime's Date prints, for any fraction and any year PostgreSQL writes so", () => {
    const samples = [0, -1, -62_135_596_800_000, 951_782_400_000, 253_402_300_799_999];
    for (let i = 0; i < 20_000; i++)
      samples.push(Math.floor(Math.random() * 315_537_897_600_000) - 62_135_596_800_000);
    for (const ms of samples)
      for (let digits = 0; digits <= 6; digits++) {
        const text = pgText(ms, digits);
        expect(pgIsoTime(text)).toBe(pgTime(text).toISOString());
      }
  });

  it('sends other zones, forms and Dates through the Date', () => {
    for (const text of ['2026-11-22 12:15:03.5+02', '2026-11-22 05:45:03+05:30', '2026-11-22T10:15:03.5Z'])
      expect(pgIsoTime(text)).toBe(pgTime(text).toISOString());
    const d = new Date('2026-11-22T10:15:03.120Z');
    expect(pgIsoTime(d)).toBe('2026-11-22T10:15:03.120Z');
  });
});

describe('PgTimeText', () => {
  it('prints as the Date of its text does, in the DateTime scalar, cursors and JSON', () => {
    for (const text of [
      '2026-11-22 10:15:03.123456+00',
      '2026-11-22 10:15:03+00',
      '2026-11-22 12:15:03.5+02',
    ]) {
      const kept = new PgTimeText(text);
      const date = pgTime(text);
      expect(DateTimeISO.serialize(kept)).toBe(DateTimeISO.serialize(date));
      expect(encodeCursor({ id: 'x', createdAt: kept })).toBe(encodeCursor({ id: 'x', createdAt: date }));
      expect(JSON.stringify({ kept })).toBe(JSON.stringify({ kept: date }));
    }
  });
});

describe('Pauses', () => {
  it('cuts every pause under way short at once, and forgets those that ended', async () => {
    const pauses = new Pauses();
    let ended = 0;
    const long = [pauses.pause(60_000), pauses.pause(60_000)].map((p) => p.then(() => ended++));
    await pauses.pause(1); // ends by itself
    expect(ended).toBe(0);
    pauses.wakeAll();
    await Promise.all(long);
    expect(ended).toBe(2);
    pauses.wakeAll(); // nothing left to wake
  });
});
