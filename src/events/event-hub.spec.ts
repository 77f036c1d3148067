import { Listeners, type Gathering } from './event-hub';

/** Rounds that start at once, whatever their size (the cases below count turns of the event loop). */
const NO_GATHERING: Gathering = { fromListeners: Infinity, msPerListener: 0, maxMs: 0 };

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
    const listeners = new Listeners<number>(undefined, NO_GATHERING);
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

describe('Listeners, paced, with several events pending', () => {
  const turn = () => new Promise<void>((r) => setImmediate(r));

  it('hands a listener not reached yet all its pending events in one turn, in order; one already reached hears the rest later', async () => {
    const listeners = new Listeners<number>(undefined, NO_GATHERING);
    /** Per listener: the events heard, with the turn each came in. */
    const heard: { event: number; turn: number }[][] = Array.from({ length: 200 }, () => []);
    let turns = 0;
    heard.forEach((got) => listeners.add('k', (event) => got.push({ event, turn: turns }), true));
    listeners.emit(['k'], 1);
    await turn();
    turns++;
    const reached = heard.filter((got) => got.length).length;
    expect(reached).toBeGreaterThan(0);
    expect(reached).toBeLessThan(200);
    // Three more while the first is on its way.
    listeners.emit(['k'], 2);
    listeners.emit(['k'], 3);
    listeners.emit(['k'], 4);
    for (let i = 0; i < 100 && heard.some((got) => got.length < 4); i++) {
      await turn();
      turns++;
    }
    for (const got of heard) expect(got.map((h) => h.event)).toEqual([1, 2, 3, 4]);
    // Those not reached by the first turn heard all four in one turn.
    for (const got of heard.slice(reached)) expect(new Set(got.map((h) => h.turn)).size).toBe(1);
    // Those reached heard 2, 3 and 4 together, after the others had heard them.
    const last = Math.max(...heard.slice(reached).map((got) => got[0].turn));
    for (const got of heard.slice(0, reached)) {
      expect(got[1].turn).toBe(got[3].turn);
      expect(got[1].turn).toBeGreaterThanOrEqual(last);
    }
  });

  it('keeps each key apart, drops what a stopped listener had pending, and goes on when one throws', async () => {
    const listeners = new Listeners<string>();
    const got: Record<string, string[]> = { a: [], b: [], both: [] };
    const offA = listeners.add('a', (e) => got.a.push(e), true);
    listeners.add('b', (e) => got.b.push(e), true);
    listeners.add('a', (e) => got.both.push(e), true);
    listeners.add('b', (e) => got.both.push(e), true);
    listeners.add(
      'a',
      () => {
        throw new Error('broken');
      },
      true,
    );
    listeners.emit(['a'], 'a1');
    listeners.emit(['b'], 'b1');
    listeners.emit(['a', 'b'], 'ab');
    listeners.emit(['a'], 'a2');
    offA(); // stopped with three events pending: hears none of them
    for (let i = 0; i < 5; i++) await turn();
    expect(got.a).toEqual([]);
    expect(got.b).toEqual(['b1', 'ab']);
    expect(got.both).toEqual(['a1', 'ab', 'a2', 'b1', 'ab']);
    listeners.emit(['b'], 'b2');
    await turn();
    expect(got.b).toEqual(['b1', 'ab', 'b2']);
  });

  it('serves everyone, each event once and in order, when events keep coming during a long round', async () => {
    const listeners = new Listeners<number>(undefined, NO_GATHERING);
    const heard: number[][] = Array.from({ length: 5000 }, () => []);
    heard.forEach((got) => listeners.add('k', (e) => got.push(e), true));
    for (let e = 0; e < 10; e++) {
      listeners.emit(['k'], e);
      await turn();
    }
    for (let i = 0; i < 1000 && heard.some((got) => got.length < 10); i++) await turn();
    const all = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
    expect(heard.every((got) => got.join() === all.join())).toBe(true);
  });
});

describe('Listeners, paced, gathering', () => {
  const turn = () => new Promise<void>((r) => setImmediate(r));
  const gathering: Gathering = { fromListeners: 100, msPerListener: 0.1, maxMs: 30 };

  it('starts a round of many listeners late, and hands each the events that came meanwhile together', async () => {
    const listeners = new Listeners<number>(undefined, gathering);
    /** Per listener: the events heard, with the turn each came in. */
    const heard: { event: number; turn: number }[][] = Array.from({ length: 150 }, () => []);
    let turns = 0;
    heard.forEach((got) => listeners.add('k', (event) => got.push({ event, turn: turns }), true));
    listeners.emit(['k'], 1);
    await turn();
    turns++;
    listeners.emit(['k'], 2);
    await turn();
    turns++;
    // Two turns on: nobody has heard anything yet (a round of ten slices would have begun).
    expect(heard.every((got) => got.length === 0)).toBe(true);
    listeners.emit(['k'], 3);
    for (let i = 0; i < 10_000 && heard.some((got) => got.length < 3); i++) {
      await turn();
      turns++;
    }
    for (const got of heard) {
      expect(got.map((h) => h.event)).toEqual([1, 2, 3]);
      expect(new Set(got.map((h) => h.turn)).size).toBe(1);
    }
  });

  it('starts a round of few listeners at once, and a later round of many late again', async () => {
    const listeners = new Listeners<string>(undefined, gathering);
    const few: string[][] = Array.from({ length: 99 }, () => []);
    const offs = few.map((got) => listeners.add('few', (e) => got.push(e), true));
    listeners.emit(['few'], 'a');
    for (let i = 0; i < 7; i++) await turn(); // 99 listeners: seven slices
    expect(few.every((got) => got.join() === 'a')).toBe(true);
    const many: string[][] = Array.from({ length: 100 }, () => []);
    many.forEach((got) => listeners.add('many', (e) => got.push(e), true));
    offs.forEach((off) => off());
    listeners.emit(['many'], 'b');
    for (let i = 0; i < 7; i++) await turn();
    expect(many.every((got) => got.length === 0)).toBe(true);
    for (let i = 0; i < 10_000 && many.some((got) => !got.length); i++) await turn();
    expect(many.every((got) => got.join() === 'b')).toBe(true);
    expect(few.every((got) => got.join() === 'a')).toBe(true);
  });
});
