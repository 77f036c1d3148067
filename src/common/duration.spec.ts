import { parseDuration } from './duration';

describe('parseDuration', () => {
  it.each([
    ['30s', 30_000],
    ['5m', 300_000],
    ['1h30m', 5_400_000],
    ['1h2m3s', 3_723_000],
    ['1.5h', 5_400_000],
    ['500ms', 500],
    ['2s500ms', 2500],
  ])('reads %s', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '30', 's', '5 m', '-5s', '5m1h', '1m1m', '5d', '1e3s', '30S', `${'1'.repeat(70)}s`])(
    'refuses %j',
    (text) => {
      expect(parseDuration(text)).toBeNull();
    },
  );
});
