import { EventQueue } from './event-bus';

describe('EventQueue', () => {
  it('hands pushed values to a waiting consumer and buffers the rest, in order', async () => {
    const q = new EventQueue<number>(() => undefined);
    const next = q.next();
    q.push(1);
    q.push(2);
    q.push(3);
    expect(await next).toEqual({ value: 1, done: false });
    expect(await q.next()).toEqual({ value: 2, done: false });
    expect(await q.next()).toEqual({ value: 3, done: false });
  });

  it('ends a consumer that falls too far behind with an error, and unsubscribes', async () => {
    const onClose = jest.fn();
    const q = new EventQueue<number>(onClose, 3);
    for (let i = 0; i < 5; i++) q.push(i);
    await expect(q.next()).resolves.toEqual({ value: 0, done: false });
    const drained = [];
    for (;;) {
      try {
        const r = await q.next();
        if (r.done) break;
        drained.push(r.value);
      } catch (err) {
        expect((err as Error).message).toMatch(/too slow/);
        break;
      }
    }
    expect(drained.length).toBeLessThan(4);
    expect(onClose).toHaveBeenCalledTimes(1);
  });

  it('unsubscribes once when the consumer stops', async () => {
    const onClose = jest.fn();
    const q = new EventQueue<number>(onClose);
    const pending = q.next();
    await q.return();
    await q.return();
    expect(await pending).toEqual({ value: undefined, done: true });
    expect(onClose).toHaveBeenCalledTimes(1);
    q.push(1);
    expect(await q.next()).toEqual({ value: undefined, done: true });
  });
});
