import {
  createSourceEventStream,
  execute,
  print,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLError,
  type GraphQLFormattedError,
} from 'graphql';
import type { Socket } from 'node:net';
import type WebSocket from 'ws';
import type { Principal } from '../common/principal';
import { isPushable, type Pushable } from '../events/event-bus';
import { Loaders } from '../graphql/graphql.loaders';

/** Where a subscription's messages go: its socket, and its id in graphql-ws's protocol. */
export interface Target {
  socket: WebSocket;
  id: string;
}

/** graphql-ws's close code for a socket past its bound of unsent bytes (retryable for its client). */
export const TOO_SLOW = 4413;

/** The socket is OPEN (ws's readyState). */
const OPEN = 1;

/**
 * Subscriptions that share their executions: each event of a subscription's stream (the same
 * object for every subscription that hears it, see JobLive) is executed once per selection and
 * audience, serialised once, and the same bytes are written to every socket, only the operation id
 * spliced in, as graphql-ws would write them (`{"id":…,"type":"next","payload":…}`).
 *
 * A subscription's own values (a job's state when it subscribed) are other objects and get an
 * execution of their own. The audience is the principal as field resolvers may read it (see
 * selectionKey): two subscribers share only what both would see.
 *
 * A socket whose unsent bytes pass `maxBufferBytes` is closed with TOO_SLOW: its client comes back
 * and reads again, as after any reconnection; the process holds at most that much for it.
 */
export class SharedExecutions {
  /** Per event: each selection's serialised payload, in UTF-8. Weak: gone with the event. */
  private readonly payloads = new WeakMap<object, Map<string, Promise<Buffer> | Buffer>>();
  private runs = 0;
  /** Per socket, the frames sent in this run of code, written together (see framesOf). */
  private readonly outbox = new Map<WebSocket, Buffer[]>();

  constructor(
    private readonly opts: {
      maxBufferBytes: number;
      /** Called once for each socket closed as too slow. */
      tooSlow?: () => void;
      formatError: (error: GraphQLError) => GraphQLFormattedError;
    },
  ) {}

  /** Executions made so far (for tests and the bench). */
  get executions(): number {
    return this.runs;
  }

  /**
   * The subscription of `args` for graphql-ws: its source stream; each value is sent to `target`
   * here, so the iterator yields nothing and completes when the stream does (graphql-ws then sends
   * `complete`, after every `next`); an error of the stream reaches graphql-ws as before.
   */
  async subscribe(
    args: ExecutionArgs,
    target: Target,
  ): Promise<AsyncIterableIterator<never> | ExecutionResult> {
    const source = await createSourceEventStream(args);
    if (!(Symbol.asyncIterator in Object(source))) return source as ExecutionResult;
    const stream = source as AsyncIterableIterator<unknown>;
    const key = selectionKey(args);
    const prefix = Buffer.from(`{"id":${JSON.stringify(target.id)},"type":"next","payload":`);
    if (isPushable(stream)) return this.pushed(stream, key, args, target.socket, prefix);
    const next = async (): Promise<IteratorResult<never>> => {
      for (;;) {
        const item = await stream.next();
        if (item.done) return { value: undefined, done: true };
        // A socket closing (too slow, or gone) is sent nothing more: nothing to execute for it.
        if (target.socket.readyState !== OPEN) continue;
        const ready = this.payloadOf(item.value, key, args);
        // Once made, the text is at hand: no turn of the promise queue per subscriber.
        this.send(target.socket, prefix, Buffer.isBuffer(ready) ? ready : await ready);
      }
    };
    const feed: AsyncIterableIterator<never> = {
      next,
      return: async () => {
        await stream.return?.();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]: () => feed,
    };
    return feed;
  }

  /**
   * The same for a stream that pushes its values: each is sent in the call that hands it over when
   * its payload is made already (the common case: another subscriber's execution), without a
   * promise per subscriber; one whose execution is under way holds the later ones back, in order.
   * graphql-ws's one `next()` resolves when the stream ends.
   */
  private pushed(
    stream: Pushable<unknown>,
    key: string,
    args: ExecutionArgs,
    socket: WebSocket,
    prefix: Buffer,
  ): AsyncIterableIterator<never> {
    const DONE: IteratorResult<never> = { value: undefined, done: true };
    let settle!: (r: IteratorResult<never>) => void;
    let fail!: (err: unknown) => void;
    const finished = new Promise<IteratorResult<never>>((resolve, reject) => {
      settle = resolve;
      fail = reject;
    });
    /** Values waiting for an execution: later ones go after them. */
    let waiting: Promise<void> | null = null;
    const later = (step: () => void | Promise<void>) => {
      const chained: Promise<void> = (waiting ?? Promise.resolve()).then(step).then(() => {
        if (waiting === chained) waiting = null;
      });
      waiting = chained;
      chained.catch((err) => {
        fail(err); // graphql-ws sends the error, as when a pulled value fails
        void stream.return?.();
      });
    };
    const sendValue = (value: unknown): void | Promise<void> => {
      // A socket closing (too slow, or gone) is sent nothing more: nothing to execute for it.
      if (socket.readyState !== OPEN) return;
      const ready = this.payloadOf(value, key, args);
      if (Buffer.isBuffer(ready)) return this.send(socket, prefix, ready);
      return ready.then((payload) => this.send(socket, prefix, payload));
    };
    let started = false;
    const feed: AsyncIterableIterator<never> = {
      // Called once by graphql-ws, when it is ready for values (as a pulled stream is first read).
      next: () => {
        if (!started) {
          started = true;
          stream.pushTo({
            next: (value) => {
              if (waiting) return later(() => sendValue(value));
              const sent = sendValue(value);
              if (sent) later(() => sent);
            },
            end: (err) => {
              const end = () => (err === undefined ? settle(DONE) : fail(err));
              if (waiting) void waiting.then(end, () => undefined);
              else end();
            },
          });
        }
        return finished;
      },
      return: async () => {
        await stream.return?.();
        return DONE;
      },
      [Symbol.asyncIterator]: () => feed,
    };
    return feed;
  }

  /** The serialised payload of `event` for the selection `key`: executed once for all who share it. */
  private payloadOf(event: unknown, key: string, args: ExecutionArgs): Promise<Buffer> | Buffer {
    if (typeof event !== 'object' || event === null) return this.run(event, args);
    let byKey = this.payloads.get(event);
    if (!byKey) this.payloads.set(event, (byKey = new Map()));
    let payload = byKey.get(key);
    if (payload === undefined) {
      const made = this.run(event, args);
      byKey.set(key, (payload = made));
      made.then(
        (text) => byKey.set(key, text),
        () => undefined, // each subscriber awaiting it is told
      );
    }
    return payload;
  }

  /**
   * One execution, with loaders of its own: a subscription's context lives as long as it does, and
   * what one event loaded must not be served to the next.
   */
  private async run(event: unknown, args: ExecutionArgs): Promise<Buffer> {
    this.runs++;
    const contextValue = { ...(args.contextValue as object), loaders: new Loaders() };
    const { errors, ...rest } = await execute({ ...args, rootValue: event, contextValue });
    // What graphql-ws sends, with the errors shaped as over HTTP.
    return Buffer.from(
      JSON.stringify(errors ? { ...rest, errors: errors.map(this.opts.formatError) } : rest),
    );
  }

  /** Sends `{"id":…,"type":"next","payload":<payload>}` (`prefix` holds all before the payload). */
  private send(socket: WebSocket, prefix: Buffer, payload: Buffer): void {
    if (socket.readyState !== OPEN) return;
    const frames = this.framesOf(socket);
    if (frames) frames.push(prefix, payload);
    else if (socket.bufferedAmount > this.opts.maxBufferBytes) this.closeTooSlow(socket);
    else socket.send(Buffer.concat([prefix, payload, CLOSE_BRACE]), { binary: false });
  }

  private closeTooSlow(socket: WebSocket): void {
    this.opts.tooSlow?.();
    socket.close(TOO_SLOW, 'subscriber too slow: too many unsent messages; reconnect to read again');
  }

  /**
   * Where `socket`'s messages wait to be written, as (prefix, payload) pairs: what is sent in one
   * run of code (the events the hub hands a subscriber together; the subscribers of one slice; the
   * promises of one turn) leaves as one buffer in one write, not a write per part (each a pass
   * through the stream). Written in a microtask queued with the first message, so before whatever
   * graphql-ws sends later on the same socket (its `complete` comes after the stream's end, a later
   * microtask). Null when this WebSocket has no socket of its own to write to.
   */
  private framesOf(socket: WebSocket): Buffer[] | null {
    let frames = this.outbox.get(socket);
    if (frames) return frames;
    // ws keeps its net.Socket private; without one (another implementation) `ws` frames the message.
    const raw = rawSocket(socket);
    if (!raw || typeof raw.write !== 'function' || hasExtensions(socket)) return null;
    this.outbox.set(socket, (frames = []));
    if (this.outbox.size === 1) queueMicrotask(() => this.flush());
    return frames;
  }

  private flush(): void {
    for (const [socket, frames] of this.outbox) {
      // A socket closed meanwhile gets nothing after its close frame.
      if (socket.readyState !== OPEN) continue;
      const raw = rawSocket(socket)!;
      if (raw.writableLength > this.opts.maxBufferBytes) this.closeTooSlow(socket);
      else raw.write(framed(frames));
    }
    this.outbox.clear();
  }
}

function rawSocket(socket: WebSocket): Socket | undefined {
  return (socket as unknown as { _socket?: Socket })._socket;
}

/**
 * (prefix, payload) pairs as the unmasked, final text frames of `${prefix}${payload}}`, in one
 * buffer (RFC 6455, 5.2: a server's frames are not masked, and this server negotiates no
 * compression, so a frame is a header and bytes). The payload is the same Buffer for every
 * subscriber, where `ws` would encode each subscriber's string again.
 */
function framed(pairs: readonly Buffer[]): Buffer {
  let size = 0;
  for (let i = 0; i < pairs.length; i += 2) {
    const length = pairs[i].length + pairs[i + 1].length + 1;
    size += length + (length < 126 ? 2 : length < 65536 ? 4 : 10);
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (let i = 0; i < pairs.length; i += 2) {
    const length = pairs[i].length + pairs[i + 1].length + 1;
    out[at++] = 0x81;
    if (length < 126) out[at++] = length;
    else if (length < 65536) {
      out[at++] = 126;
      at = out.writeUInt16BE(length, at);
    } else {
      out[at++] = 127;
      at = out.writeBigUInt64BE(BigInt(length), at);
    }
    at += pairs[i].copy(out, at);
    at += pairs[i + 1].copy(out, at);
    out[at++] = 0x7d; // }
  }
  return out;
}

const CLOSE_BRACE = Buffer.from('}');

/** A socket that negotiated an extension (permessage-deflate) needs `ws`'s own framing. */
function hasExtensions(socket: WebSocket): boolean {
  return socket.extensions !== '';
}

/** Principal properties that say where a request came from, not what it may see. */
const NOT_AUDIENCE = new Set(['origin']);

/**
 * A subscription's selection and audience: the same key, the same payload for every event. The
 * audience is every property of the principal (objects by their id) but NOT_AUDIENCE: a property
 * added later keeps two principals apart until it is said not to matter.
 */
function selectionKey(args: ExecutionArgs): string {
  const principal = (args.contextValue as { principal?: Principal | null } | undefined)?.principal;
  const audience = principal
    ? Object.entries(principal)
        .filter(([k]) => !NOT_AUDIENCE.has(k))
        .map(([k, v]) => [k, typeof v === 'object' && v !== null ? (v as { id?: unknown }).id : v])
        .sort(([a], [b]) => String(a).localeCompare(String(b)))
    : null;
  return JSON.stringify([
    audience,
    args.operationName ?? null,
    print(args.document),
    sorted(args.variableValues),
  ]);
}

/** A value with its objects' keys in one order, so that equal variables give equal keys. */
function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, sorted((value as Record<string, unknown>)[k])]),
  );
}
