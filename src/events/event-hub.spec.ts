import { Listeners } from './event-hub';

describe('Listeners', () => {
  it('hands an event to the listeners of its keys only, and stops a listener once', () => {
    const got: string[] = [];
    const listeners = new Listeners<string>();
    const offA = listeners.add('a', (e) => got.push(`a1 ${e}`));
    listeners.add('a', (e) => got.push(`a2 ${e}`));
    listeners.add('b', (e) => got.push(`b ${e}`));
    listeners.emit(['a', 'c'], 'x');
    expect(got).toEqual(['a1 x', 'a2 x']);
    expect(listeners.size).toBe(3);
    offA();
    offA();
    expect(listeners.size).toBe(2);
    listeners.emit(['a', 'b'], 'y');
    expect(got).toEqual(['a1 x', 'a2 x', 'a2 y', 'b y']);
  });

  it('lets the same function listen twice, and forgets a key nobody listens under', () => {
    const got: string[] = [];
    const listeners = new Listeners<string>();
    const listener = (e: string) => got.push(e);
    const first = listeners.add('k', listener);
    const second = listeners.add('k', listener);
    listeners.emit(['k'], 'x');
    first();
    listeners.emit(['k'], 'y');
    second();
    expect(got).toEqual(['x', 'x', 'y']);
    expect(listeners.keys()).toEqual([]);
  });

  it('goes on with the other listeners when one throws', () => {
    const got: string[] = [];
    const listeners = new Listeners<string>();
    listeners.add('k', () => {
      throw new Error('broken');
    });
    listeners.add('k', (e) => got.push(e));
    listeners.emit(['k'], 'x');
    expect(got).toEqual(['x']);
  });
});

describe('Listeners, paced', () => {
  const turn = () => new Promise<void>((r) => setImmediate(r));

  it('calls paced listeners in slices with a turn of the event loop between them, each event once and in order', async () => {
    const listeners = new Listeners<number>();
    const heard: number[][] = Array.from({ length: 1000 }, () => []);
    const offs = heard.map((got) => listeners.add('k', (e) => got.push(e), true));
    const atOnce: number[] = [];
    listeners.add('k', (e) => atOnce.push(e));
    offs[999](); // stopped before anything was handed out: hears nothing
    listeners.emit(['k'], 1);
    listeners.emit(['k'], 2);
    // The listener that is not paced heard both at once; the paced ones none yet.
    expect(atOnce).toEqual([1, 2]);
    expect(heard.every((got) => got.length === 0)).toBe(true);
    // After one turn of the event loop some heard the first event, not all of them.
    await turn();
    const called = heard.filter((got) => got.length > 0).length;
    expect(called).toBeGreaterThan(0);
    expect(called).toBeLessThan(999);
    offs[998](); // stopped while the events are on their way: hears no more
    for (let i = 0; i < 100 && heard[997].length < 2; i++) await turn();
    for (const [i, got] of heard.entries()) expect(got).toEqual(i >= 998 ? [] : [1, 2]);
  });
});
