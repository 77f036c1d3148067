import { AppError } from '../common/errors';
import { bucketsOf, parsePeriod } from './billing.period';

const now = new Date('2026-11-22T10:15:00Z');
const iso = (p: { start: Date; end: Date }) => [p.start.toISOString(), p.end.toISOString()];

function problem(from?: string, to?: string): Record<string, string> | undefined {
  try {
    parsePeriod({ from, to }, now);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('VALIDATION_FAILED');
    return (err as AppError).details;
  }
  throw new Error('expected a validation error');
}

describe('parsePeriod', () => {
  it('defaults to the current UTC calendar month', () => {
    expect(iso(parsePeriod({}, now))).toEqual(['2026-11-01T00:00:00.000Z', '2026-12-01T00:00:00.000Z']);
    expect(iso(parsePeriod({ from: '', to: null }, new Date('2026-12-31T23:59:59.999Z')))).toEqual([
      '2026-12-01T00:00:00.000Z',
      '2027-01-01T00:00:00.000Z',
    ]);
  });

  it('takes dates as whole UTC days, `to` included', () => {
    expect(iso(parsePeriod({ from: '2026-10-01', to: '2026-10-31' }, now))).toEqual([
      '2026-10-01T00:00:00.000Z',
      '2026-11-01T00:00:00.000Z',
    ]);
    expect(iso(parsePeriod({ from: '2024-02-29', to: '2024-02-29' }, now))).toEqual([
      '2024-02-29T00:00:00.000Z',
      '2024-03-01T00:00:00.000Z',
    ]);
  });

  it('takes date-times with a zone, `to` excluded', () => {
    expect(
      iso(parsePeriod({ from: '2026-10-01T02:30:00+02:00', to: '2026-10-01T12:00:00.5Z' }, now)),
    ).toEqual(['2026-10-01T00:30:00.000Z', '2026-10-01T12:00:00.500Z']);
    expect(iso(parsePeriod({ from: '2026-10-01T00:00Z', to: '2026-09-30T20:00:01-04:00' }, now))).toEqual([
      '2026-10-01T00:00:00.000Z',
      '2026-10-01T00:00:01.000Z',
    ]);
  });

  it.each([
    ['2026-13-01'],
    ['2026-02-30'],
    ['2026-10-01T24:00:00Z'],
    ['2026-10-01T10:00:00'],
    ['2026-10-01 10:00:00Z'],
    ['yesterday'],
    ['1969-12-31'],
    ['2026-10-01T10:00:00+25:00'],
    ['1759276800'],
  ])('refuses %j naming the field', (bad) => {
    expect(problem(bad, '2026-12-01')).toEqual({ from: expect.stringMatching(/expected a date/) });
    expect(problem('2026-01-01', bad)).toEqual({ to: expect.stringMatching(/expected a date/) });
  });

  it('wants both ends or neither', () => {
    expect(problem('2026-10-01', undefined)).toEqual({ to: expect.stringMatching(/required/) });
    expect(problem(undefined, '2026-10-01')).toEqual({ from: expect.stringMatching(/required/) });
  });

  it('wants from before to, and a bounded period', () => {
    expect(problem('2026-10-02', '2026-10-01')).toEqual({ to: expect.stringMatching(/must be after from/) });
    expect(problem('2026-10-01T10:00:00Z', '2026-10-01T10:00:00Z')).toEqual({ to: expect.any(String) });
    expect(problem('2020-01-01', '2026-01-01')).toEqual({ to: expect.stringMatching(/at most 1096 days/) });
    expect(iso(parsePeriod({ from: '2023-01-01', to: '2025-12-31' }, now))[1]).toBe(
      '2026-01-01T00:00:00.000Z',
    );
  });
});

describe('bucketsOf', () => {
  it('cuts at UTC days, the first and last partial', () => {
    const buckets = bucketsOf(
      { start: new Date('2026-10-01T12:00:00Z'), end: new Date('2026-10-03T06:00:00Z') },
      'day',
    );
    expect(buckets.map(iso)).toEqual([
      ['2026-10-01T12:00:00.000Z', '2026-10-02T00:00:00.000Z'],
      ['2026-10-02T00:00:00.000Z', '2026-10-03T00:00:00.000Z'],
      ['2026-10-03T00:00:00.000Z', '2026-10-03T06:00:00.000Z'],
    ]);
  });

  it('cuts at UTC months', () => {
    const buckets = bucketsOf(
      { start: new Date('2026-01-15T00:00:00Z'), end: new Date('2026-03-02T00:00:00Z') },
      'month',
    );
    expect(buckets.map(iso)).toEqual([
      ['2026-01-15T00:00:00.000Z', '2026-02-01T00:00:00.000Z'],
      ['2026-02-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z'],
      ['2026-03-01T00:00:00.000Z', '2026-03-02T00:00:00.000Z'],
    ]);
    expect(
      bucketsOf({ start: new Date('2026-10-01T00:00:00Z'), end: new Date('2026-11-01T00:00:00Z') }, 'day'),
    ).toHaveLength(31);
  });
});
