import { Worker } from 'node:worker_threads';

/**
 * The worker: one SHA-256 per upload id, fed in order; each batch buffer goes back to the pool.
 * Plain JavaScript evaluated by the worker, so it runs the same from `dist/` and under the test
 * runner.
 */
const WORKER = `
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const hashes = new Map();
parentPort.on('message', (m) => {
  let h = hashes.get(m.id);
  if (!h && m.type !== 'drop') hashes.set(m.id, (h = createHash('sha256')));
  if (m.type === 'data') {
    h.update(new Uint8Array(m.buffer, 0, m.length));
    parentPort.postMessage({ id: m.id, buffer: m.buffer }, [m.buffer]); // back to the pool
  } else {
    hashes.delete(m.id);
    if (m.type === 'end') parentPort.postMessage({ id: m.id, digest: h.digest('hex') });
  }
});`;

/** Bytes handed to the worker in one message. */
const BATCH_BYTES = 1024 * 1024;
/**
 * Batch buffers of the process, moved to the worker and back (never copied, never garbage):
 * all the memory hashing uses, whatever the number of uploads. An upload waits for a free one.
 */
const POOL_BUFFERS = 16;
/** An idle worker is stopped after this long (its memory back to the system). */
const IDLE_MS = 30_000;

interface Pending {
  digest?: { resolve: (hex: string) => void; reject: (err: Error) => void };
  /** The worker died with part of the bytes: this hash can only fail. */
  failed?: Error;
}

const free: ArrayBuffer[] = [];
let allocated = 0;
const waiting: (() => void)[] = [];

function takeBuffer(): ArrayBuffer | undefined {
  if (free.length) return free.pop();
  if (allocated < POOL_BUFFERS) {
    allocated++;
    return new ArrayBuffer(BATCH_BYTES);
  }
  return undefined;
}

function giveBack(buffer: ArrayBuffer): void {
  free.push(buffer);
  waiting.shift()?.();
}

let worker: Worker | null = null;
let idle: NodeJS.Timeout | undefined;
let nextId = 0;
const pending = new Map<number, Pending>();

function theWorker(): Worker {
  clearTimeout(idle);
  if (worker) return worker;
  const w = new Worker(WORKER, { eval: true });
  w.on('message', (m: { id: number; buffer?: ArrayBuffer; digest?: string }) => {
    if (m.buffer) return giveBack(m.buffer);
    const p = pending.get(m.id);
    if (!p || m.digest === undefined) return;
    pending.delete(m.id);
    p.digest?.resolve(m.digest);
    stopWhenIdle();
  });
  const fail = (err: Error) => {
    if (worker !== w) return;
    worker = null;
    for (const p of pending.values()) {
      p.failed = err;
      p.digest?.reject(err);
    }
    pending.clear();
    // Buffers the dead worker held are gone; whoever waits for one gets a new one.
    allocated = free.length;
    while (waiting.length) waiting.shift()!();
  };
  w.on('error', fail);
  w.on('exit', () => fail(new Error('the hashing worker stopped')));
  // Referenced only while bytes are on their way (after the listeners, which would ref it).
  w.unref();
  return (worker = w);
}

function stopWhenIdle(): void {
  if (pending.size || !worker) return;
  worker.unref(); // nothing waits on it now
  clearTimeout(idle);
  idle = setTimeout(() => {
    const w = worker;
    worker = null;
    void w?.terminate();
  }, IDLE_MS);
  idle.unref();
}

/**
 * The SHA-256 of a stream's bytes, computed on a worker thread while the request's thread parses
 * and writes them: hashing was the largest cost of an upload on the request's thread. Bytes are
 * copied into 1 MiB pool buffers that move to the worker and back, so memory stays bounded and
 * an upload whose bytes the worker has not caught up with waits for a free buffer.
 */
export class StreamHash {
  private readonly id = nextId++;
  private readonly state: Pending = {};
  private current: Buffer | null = null;
  private used = 0;
  private finished = false;
  private dropped = false;

  constructor() {
    pending.set(this.id, this.state);
  }

  /** Adds bytes; calls `then` once they are copied (at once, or when a buffer is free). */
  update(chunk: Buffer, then: () => void): void {
    let offset = 0;
    const go = () => {
      while (offset < chunk.length) {
        if (this.state.failed || this.dropped) return then();
        if (!this.current) {
          const buffer = takeBuffer();
          if (!buffer) return void waiting.push(go);
          this.current = Buffer.from(buffer);
        }
        const n = chunk.copy(this.current, this.used, offset);
        this.used += n;
        offset += n;
        if (this.used === this.current.length) this.flush();
      }
      then();
    };
    go();
  }

  /** The hex digest of everything added. */
  digest(): Promise<string> {
    this.flush();
    this.finished = true;
    if (this.state.failed) return Promise.reject(this.state.failed);
    return new Promise((resolve, reject) => {
      this.state.digest = { resolve, reject };
      const w = theWorker();
      w.ref();
      w.postMessage({ id: this.id, type: 'end' });
    });
  }

  /** Forgets an upload that will not finish. */
  drop(): void {
    if (this.finished) return;
    this.finished = this.dropped = true;
    if (this.current) giveBack(this.current.buffer as ArrayBuffer);
    this.current = null;
    pending.delete(this.id);
    worker?.postMessage({ id: this.id, type: 'drop' });
    stopWhenIdle();
  }

  private flush(): void {
    if (!this.current) return;
    const buffer = this.current.buffer as ArrayBuffer;
    const length = this.used;
    this.current = null;
    this.used = 0;
    if (this.state.failed) return giveBack(buffer);
    const w = theWorker();
    w.ref(); // bytes are on their way: the process waits for the worker until it is idle
    w.postMessage({ id: this.id, type: 'data', buffer, length }, [buffer]);
  }
}
