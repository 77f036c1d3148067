// The hashing worker thread of media.hasher.ts. It never returns to its event loop: it hashes
// what the request's thread publishes in the ring, then sleeps on WRITE (Worker.terminate
// interrupts the wait). Loaded as compiled JavaScript from dist/, and through @swc-node/register
// from the TypeScript sources (tests).
import { createHash, type Hash } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { END, HEADER, READ, SLEEPING, WANT, WRAP, WRITE } from './media.hasher.ring';

export interface HasherData {
  ring: SharedArrayBuffer;
  control: SharedArrayBuffer;
  size: number;
}

/** The worker's messages: an upload's digest, or "there is room again" for a waiting upload. */
export type HasherMessage = { id: number; digest: string } | { room: true };

function hashForever({ ring, control, size }: HasherData, post: (m: HasherMessage) => void): never {
  const c = new Int32Array(control);
  const head = new Int32Array(ring);
  const hashes = new Map<number, Hash>();
  let read = Atomics.load(c, READ);
  for (;;) {
    const write = Atomics.load(c, WRITE);
    if (write === read) {
      Atomics.store(c, SLEEPING, 1);
      if (Atomics.load(c, WRITE) === read) Atomics.wait(c, WRITE, read);
      Atomics.store(c, SLEEPING, 0);
      continue;
    }
    while (read !== write) {
      const at = read % size;
      const id = head[at >> 2];
      const length = head[(at >> 2) + 1];
      let step = HEADER;
      if (length === WRAP) step = size - at;
      else if (length >= 0) {
        let h = hashes.get(id);
        if (!h) hashes.set(id, (h = createHash('sha256')));
        h.update(new Uint8Array(ring, at + HEADER, length));
        step += (length + 7) & ~7;
      } else {
        const h = hashes.get(id);
        hashes.delete(id);
        if (length === END) post({ id, digest: (h ?? createHash('sha256')).digest('hex') });
      }
      read = (read + step) % (2 * size);
      Atomics.store(c, READ, read);
      // Half the ring free is worth a message to an upload waiting for room.
      if (Atomics.load(c, WANT) && (Atomics.load(c, WRITE) - read + 2 * size) % (2 * size) <= size / 2) {
        Atomics.store(c, WANT, 0);
        post({ room: true });
      }
    }
  }
}

if (parentPort) hashForever(workerData as HasherData, (m) => parentPort!.postMessage(m));
