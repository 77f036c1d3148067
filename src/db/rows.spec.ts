import { pgTime } from './rows';

describe('pgTime', () => {
  it('reads PostgreSQL timestamptz text in UTC to the millisecond', () => {
    expect(pgTime('2026-11-22 10:15:03+00').toISOString()).toBe('2026-11-22T10:15:03.000Z');
    expect(pgTime('2026-11-22 10:15:03.1+00').toISOString()).toBe('2026-11-22T10:15:03.100Z');
    expect(pgTime('2026-11-22 10:15:03.123456+00').toISOString()).toBe('2026-11-22T10:15:03.123Z');
    expect(pgTime('1999-01-01 00:00:00.05+00').toISOString()).toBe('1999-01-01T00:00:00.050Z');
  });

  it('leaves other zones and Dates to the general parser', () => {
    expect(pgTime('2026-11-22 12:15:03.5+02').toISOString()).toBe('2026-11-22T10:15:03.500Z');
    expect(pgTime('2026-11-22 05:45:03+05:30').toISOString()).toBe('2026-11-22T00:15:03.000Z');
    const d = new Date();
    expect(pgTime(d)).toBe(d);
  });
});
