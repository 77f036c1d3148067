import { GIVE_UP_AFTER_MS, parseRetryAfter, retryDelayMs } from './webhook.backoff';

describe('retryDelayMs', () => {
  const middle = () => 0.5;

  it('starts at about a second, doubles, and stops growing at 10 minutes', () => {
    expect([1, 2, 3, 4, 10, 11, 50].map((n) => retryDelayMs(n, null, middle))).toEqual([
      1000, 2000, 4000, 8000, 512_000, 600_000, 600_000,
    ]);
  });

  it('jitters each wait by up to a quarter either way', () => {
    expect(retryDelayMs(3, null, () => 0)).toBe(3000);
    expect(retryDelayMs(3, null, () => 0.999999)).toBe(5000);
  });

  it('waits at least what Retry-After asks, up to an hour', () => {
    expect(retryDelayMs(1, 30_000, middle)).toBe(30_000);
    expect(retryDelayMs(12, 30_000, middle)).toBe(600_000);
    expect(retryDelayMs(1, 10 * 3600_000, middle)).toBe(3600_000);
  });

  it('keeps trying for at least 24 hours, and a receiver back after a minute hears within a minute', () => {
    // Even with the shortest jitter every time, the attempts span the whole day before giving up.
    let elapsed = 0;
    let attempts = 1;
    while (elapsed < GIVE_UP_AFTER_MS) {
      elapsed += retryDelayMs(attempts++, null, () => 0);
    }
    expect(attempts).toBeGreaterThan(100);
    // The longest jitter: the first attempt after second 60 comes before second 120.
    let t = 0;
    for (let n = 1; t <= 60_000; n++) t += retryDelayMs(n, null, () => 0.999999);
    expect(t).toBeLessThan(120_000);
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates', () => {
    expect(parseRetryAfter('3')).toBe(3000);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4000)).toBe(6000);
    expect(parseRetryAfter(undefined)).toBeNull();
    expect(parseRetryAfter('soon')).toBeNull();
  });
});
