import { pgIsoTime, pgTime } from './rows';

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
