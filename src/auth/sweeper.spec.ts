import { sweeper } from './sweeper';

describe('sweeper', () => {
  afterEach(() => jest.useRealTimers());

  it('sweeps at the first poke, then at most once per interval, and survives a failed sweep', async () => {
    jest.useFakeTimers({ now: 1_000_000 });
    let runs = 0;
    const poke = sweeper(60_000, async () => {
      runs++;
      if (runs === 1) throw new Error('database gone');
    });
    poke();
    poke();
    expect(runs).toBe(1);
    jest.setSystemTime(1_000_000 + 59_999);
    poke();
    expect(runs).toBe(1);
    jest.setSystemTime(1_000_000 + 60_000);
    poke();
    expect(runs).toBe(2);
  });
});
