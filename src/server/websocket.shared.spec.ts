import { buildSchema, parse, type ExecutionArgs } from 'graphql';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { EventQueue, type FeedSink, type Pushable } from '../events/event-bus';
import { SharedExecutions } from './websocket.shared';

/** A stream that pushes what the test hands it (as JobLive's feeds do). */
class Stream implements Pushable<unknown> {
  sink: FeedSink<unknown> | null = null;
  returned = false;
  private readonly queue = new EventQueue<unknown>(() => undefined);
  pushTo(sink: FeedSink<unknown>): void {
    this.sink = sink;
  }
  next(): Promise<IteratorResult<unknown>> {
    return this.queue.next();
  }
  async return(): Promise<IteratorResult<unknown>> {
    this.returned = true;
    this.sink?.end();
    return { value: undefined, done: true };
  }
  [Symbol.asyncIterator](): this {
    return this;
  }
}

/** What a socket was sent, and whether it is open. */
function socket() {
  const sent: string[] = [];
  const s = { readyState: 1, bufferedAmount: 0, send: (m: string) => sent.push(m), close: () => undefined };
  return { socket: s as unknown as WebSocket, sent, raw: s };
}

const schema = buildSchema(`
  type Query { ok: Boolean }
  type Tick { n: Int, slow: Int, s: String }
  type Subscription { tick: Tick }
`);

function setup(stream: Stream, query = 'subscription { tick { n } }') {
  const shared = new SharedExecutions({
    maxBufferBytes: 1 << 20,
    formatError: (e) => ({ message: e.message }),
  });
  const args: ExecutionArgs = {
    schema,
    document: parse(query),
    contextValue: {},
    // The subscription's source stream, and each event as the field's value.
    rootValue: {},
    fieldResolver: (source, _args, _ctx, info) =>
      info.fieldName === 'tick' ? source : (source as Record<string, unknown>)[info.fieldName],
    subscribeFieldResolver: () => stream,
  };
  return { shared, args };
}

const turn = () => new Promise<void>((r) => setImmediate(r));

describe('SharedExecutions, a pushed stream', () => {
  it('sends each value in order, one waiting for its execution holding the later ones back, and ends when the stream does', async () => {
    const stream = new Stream();
    const { shared, args } = setup(stream, 'subscription { tick { n slow } }');
    const { socket: s, sent } = socket();
    const feed = (await shared.subscribe(args, { socket: s, id: 'a' })) as AsyncIterableIterator<never>;
    const done = feed.next();
    let release!: () => void;
    const later = new Promise<number>((r) => (release = () => r(2)));
    const events = [
      { n: 1, slow: 0 },
      { n: 2, slow: later },
      { n: 3, slow: 0 },
    ];
    for (const e of events) stream.sink!.next(e);
    expect(sent.map((m) => JSON.parse(m).payload.data.tick.n)).toEqual([]);
    await turn();
    expect(sent.map((m) => JSON.parse(m).payload.data.tick.n)).toEqual([1]);
    release();
    stream.sink!.end();
    expect(await done).toEqual({ value: undefined, done: true });
    expect(sent.map((m) => JSON.parse(m))).toEqual(
      [1, 2, 3].map((n) => ({
        id: 'a',
        type: 'next',
        payload: { data: { tick: { n, slow: n === 2 ? 2 : 0 } } },
      })),
    );
    expect(shared.executions).toBe(3);

    // A second subscription of the same selection hears the same event objects: no execution more.
    const second = new Stream();
    const other = socket();
    const feed2 = (await shared.subscribe(setup(second, 'subscription { tick { n slow } }').args, {
      socket: other.socket,
      id: 'b',
    })) as AsyncIterableIterator<never>;
    const done2 = feed2.next();
    for (const e of events) second.sink!.next(e);
    // Made already: sent in the call that handed them over.
    expect(other.sent.map((m) => JSON.parse(m).id)).toEqual(['b', 'b', 'b']);
    second.sink!.end();
    await done2;
    expect(shared.executions).toBe(3);
  });

  it("rejects graphql-ws's next() with the stream's error, after what came before it", async () => {
    const stream = new Stream();
    const { shared, args } = setup(stream);
    const { socket: s, sent } = socket();
    const feed = (await shared.subscribe(args, { socket: s, id: 'a' })) as AsyncIterableIterator<never>;
    const done = feed.next();
    stream.sink!.next({ n: 1 });
    stream.sink!.end(new Error('the job cannot be read'));
    await expect(done).rejects.toThrow('the job cannot be read');
    expect(sent).toHaveLength(1);
  });

  it('sends nothing to a socket that is closing, and return() ends the stream', async () => {
    const stream = new Stream();
    const { shared, args } = setup(stream);
    const { socket: s, sent, raw } = socket();
    const feed = (await shared.subscribe(args, { socket: s, id: 'a' })) as AsyncIterableIterator<never>;
    const done = feed.next();
    raw.readyState = 2;
    stream.sink!.next({ n: 1 });
    await turn();
    expect(sent).toEqual([]);
    expect(shared.executions).toBe(0);
    await feed.return!();
    expect(stream.returned).toBe(true);
    expect(await done).toEqual({ value: undefined, done: true });
  });
});

describe('SharedExecutions, framing on a real socket', () => {
  it('writes frames a WebSocket client reads as the messages graphql-ws would send, at every length form', async () => {
    const wss = new WebSocketServer({ port: 0 });
    const port = (wss.address() as AddressInfo).port;
    const server = new Promise<WebSocket>((resolve) => wss.once('connection', resolve));
    const client = new WebSocket(`ws://127.0.0.1:${port}`);
    const received: { text: string; binary: boolean }[] = [];
    client.on('message', (data, binary) => received.push({ text: String(data), binary }));
    await new Promise((resolve) => client.once('open', resolve));
    try {
      const stream = new Stream();
      const { shared, args } = setup(stream, 'subscription { tick { s } }');
      const feed = (await shared.subscribe(args, {
        socket: await server,
        id: 'x',
      })) as AsyncIterableIterator<never>;
      void feed.next();
      // Lengths under 126, under 65,536 and past it: the header's three forms; several in one write.
      const texts = ['a', 'é'.repeat(400), 'z'.repeat(70_000), 'b'];
      for (const s of texts) stream.sink!.next({ s });
      while (received.length < texts.length) await new Promise((r) => setTimeout(r, 10));
      expect(received.map((m) => m.binary)).toEqual(texts.map(() => false));
      expect(received.map((m) => JSON.parse(m.text))).toEqual(
        texts.map((s) => ({ id: 'x', type: 'next', payload: { data: { tick: { s } } } })),
      );
    } finally {
      client.close();
      wss.close();
    }
  });
});
