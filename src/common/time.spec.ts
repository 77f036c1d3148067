import { goTime } from './time';

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
