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
