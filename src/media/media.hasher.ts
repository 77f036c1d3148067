import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { DROP, END, HEADER, READ, SLEEPING, WANT, WRAP, WRITE } from './media.hasher.ring';
import type { HasherData, HasherMessage } from './media.hasher.worker';

/**
 * SHA-256 of uploads on a worker thread, fed through one shared ring of bytes (a
 * SharedArrayBuffer) rather than a message per batch: a `postMessage` with a transferred buffer
 * each way per MiB was the largest item of the upload's main thread after the copy itself
 * (docs/performance-history.md, "Media"). The request's thread appends records,
 * `[id, length][bytes]`, and publishes its position; the worker hashes them in order into one
 * hash per upload id. Messages remain only for what is rare: a digest, and "there is room again"
 * when the ring was full.
 */

/**
 * All the memory hashing uses, whatever the number of uploads (the old pool held 16 x 1 MiB).
 * 4 MiB beat 8 or 16 MiB woken every 0.5-2 MiB in A/B runs (docs/performance-history.md,
 * Media, rounds 3 and 4).
 */
const RING_BYTES = 4 * 1024 * 1024;
/**
 * A sleeping worker is woken once this much is waiting (and at each end or drop). At 64 KiB
 * (one socket read) `Atomics.notify` cost the request's thread about 40 ms per 512 MiB; at
 * 256 KiB the worker starts at most 0.25 ms of hashing later (docs/performance-history.md, Media,
 * round 4).
 */
const WAKE_BYTES = 256 * 1024;
/** An idle worker is stopped after this long (its memory back to the system). */
const IDLE_MS = 30_000;
/** The worker's program: compiled JavaScript from dist/, the TypeScript source under the tests. */
const WORKER_FILE = path.join(__dirname, `media.hasher.worker${path.extname(__filename)}`);

interface Pending {
  digest?: { resolve: (hex: string) => void; reject: (err: Error) => void };
  /** The worker died with part of the bytes: this hash can only fail. */
  failed?: Error;
}

interface Hasher {
  worker: Worker;
  ring: Buffer;
  head: Int32Array;
  control: Int32Array;
  /** Bytes published since the worker was last woken. */
  unwoken: number;
}

let hasher: Hasher | null = null;
let idle: NodeJS.Timeout | undefined;
let nextId = 1;
const pending = new Map<number, Pending>();
/** Uploads waiting for room in the ring, in order. */
const waiting: (() => void)[] = [];

function theHasher(): Hasher {
  clearTimeout(idle);
  if (hasher) return hasher;
  const ring = new SharedArrayBuffer(RING_BYTES);
  const control = new SharedArrayBuffer(16);
  const worker = new Worker(WORKER_FILE, {
    workerData: { ring, control, size: RING_BYTES } satisfies HasherData,
    execArgv: WORKER_FILE.endsWith('.ts') ? ['--require', '@swc-node/register'] : [],
  });
  const h: Hasher = {
    worker,
    ring: Buffer.from(ring),
    head: new Int32Array(ring),
    control: new Int32Array(control),
    unwoken: 0,
  };
  worker.on('message', (m: HasherMessage) => {
    if ('room' in m) return wakeWaiting();
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    p.digest?.resolve(m.digest);
    stopWhenIdle();
  });
  const fail = (err: Error) => {
    if (hasher !== h) return;
    hasher = null;
    for (const p of pending.values()) {
      p.failed = err;
      p.digest?.reject(err);
    }
    pending.clear();
    // Whoever waits for room gives up its bytes (its hash has failed) and goes on.
    wakeWaiting();
  };
  worker.on('error', fail);
  worker.on('exit', () => fail(new Error('the hashing worker stopped')));
  // Referenced only while bytes are on their way (after the listeners, which would ref it).
  worker.unref();
  return (hasher = h);
}

function wakeWaiting(): void {
  for (const go of waiting.splice(0)) go();
}

function stopWhenIdle(): void {
  if (pending.size || !hasher) return;
  hasher.worker.unref(); // nothing waits on it now
  clearTimeout(idle);
  idle = setTimeout(() => {
    const h = hasher;
    hasher = null;
    void h?.worker.terminate();
  }, IDLE_MS);
  idle.unref();
}

/** Bytes free in the ring. */
function room(h: Hasher): number {
  const used =
    (Atomics.load(h.control, WRITE) - Atomics.load(h.control, READ) + 2 * RING_BYTES) % (2 * RING_BYTES);
  return RING_BYTES - used;
}

/** Wakes the worker if it sleeps. */
function wake(h: Hasher): void {
  h.unwoken = 0;
  if (Atomics.load(h.control, SLEEPING)) Atomics.notify(h.control, WRITE);
}

/**
 * Appends one record at the ring's write position and publishes it, if there is room: `length`
 * bytes of `chunk` from `offset` (as many as fit, at least one), or a command. Returns the bytes
 * taken, or -1 when the ring is full.
 */
function append(h: Hasher, id: number, chunk: Buffer | null, offset: number, length: number): number {
  for (;;) {
    const write = Atomics.load(h.control, WRITE);
    const at = write % RING_BYTES;
    // Positions and sizes are multiples of 8, so a header always fits before the end.
    const free = room(h);
    const tail = RING_BYTES - at;
    const want = chunk ? HEADER + 1 : HEADER;
    if (free < want) return -1;
    if (tail < want) {
      // No byte of data fits before the end: the next record starts the ring again.
      if (free < tail + want) return -1;
      h.head[(at >> 2) + 1] = WRAP;
      Atomics.store(h.control, WRITE, (write + tail) % (2 * RING_BYTES));
      continue;
    }
    const n = chunk ? Math.min(length, tail - HEADER, free - HEADER) : 0;
    h.head[at >> 2] = id;
    h.head[(at >> 2) + 1] = chunk ? n : length;
    if (chunk) chunk.copy(h.ring, at + HEADER, offset, offset + n);
    const step = HEADER + ((n + 7) & ~7);
    Atomics.store(h.control, WRITE, (write + step) % (2 * RING_BYTES));
    h.unwoken += step;
    if (!chunk || h.unwoken >= WAKE_BYTES) wake(h);
    return n;
  }
}

/**
 * The SHA-256 of a stream's bytes, computed on a worker thread while the request's thread parses
 * and writes them: hashing was the largest cost of an upload on the request's thread. Bytes are
 * copied into a shared ring of fixed size, so memory stays bounded and an upload whose bytes the
 * worker has not caught up with waits for room.
 */
export class StreamHash {
  private readonly id = nextId++ & 0x7fffffff;
  private readonly state: Pending = {};
  private readonly hasher = theHasher();
  private finished = false;
  private dropped = false;

  constructor() {
    pending.set(this.id, this.state);
    this.hasher.worker.ref(); // bytes are on their way: the process waits for the worker until it is idle
  }

  /**
   * Adds bytes. Answers true once they are all copied; otherwise (the ring is full) the rest is
   * copied when there is room, and then `then` is called. Nothing is allocated per call on the
   * way that does not wait (it runs for every chunk of every upload).
   */
  update(chunk: Buffer, then: () => void): boolean {
    let offset = this.copy(chunk, 0);
    if (offset < 0) return true;
    // waitForRoom() may go on at once: `then` is for a wait that outlives this call.
    let waited = false;
    let done = false;
    const go = () => {
      offset = this.copy(chunk, offset);
      if (offset >= 0) this.waitForRoom(go);
      else if (waited) then();
      else done = true;
    };
    this.waitForRoom(go);
    waited = true;
    return done;
  }

  /** Copies from `offset` on as far as the ring has room: -1 when all is in, else where it stopped. */
  private copy(chunk: Buffer, offset: number): number {
    while (offset < chunk.length) {
      if (this.state.failed || this.dropped) return -1;
      const n = append(this.hasher, this.id, chunk, offset, chunk.length - offset);
      if (n < 0) return offset;
      offset += n;
    }
    return -1;
  }

  /** The hex digest of everything added. */
  digest(): Promise<string> {
    if (this.finished) return Promise.reject(new Error('this hash is finished'));
    this.finished = true;
    if (this.state.failed) return Promise.reject(this.state.failed);
    return new Promise((resolve, reject) => {
      this.state.digest = { resolve, reject };
      this.command(END);
    });
  }

  /** Forgets an upload that will not finish. */
  drop(): void {
    if (this.finished) return;
    this.finished = this.dropped = true;
    pending.delete(this.id);
    if (!this.state.failed) this.command(DROP);
    stopWhenIdle();
  }

  private command(kind: number): void {
    if (hasher !== this.hasher) return; // the worker is gone; `failed` says so
    if (append(this.hasher, this.id, null, 0, kind) < 0) this.waitForRoom(() => this.command(kind));
  }

  private waitForRoom(go: () => void): void {
    waiting.push(go);
    // Asked for after the wish is known, so the worker either sees the wish or has left room.
    Atomics.store(this.hasher.control, WANT, 1);
    wake(this.hasher);
    if (room(this.hasher) >= RING_BYTES / 2 || hasher !== this.hasher) wakeWaiting();
  }
}
