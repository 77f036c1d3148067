import { Readable, Transform, type TransformCallback } from 'node:stream';
import { AppError } from '../common/errors';
import { StreamHash } from './media.hasher';

/**
 * Counts and hashes bytes on their way to storage; fails as soon as they pass the limit. The
 * hash runs on a worker thread (StreamHash), overlapped with the parsing and the disk write.
 */
export class Meter extends Transform {
  bytes = 0;
  private readonly hash = new StreamHash();

  constructor(private readonly limit: number) {
    super({ highWaterMark: 1024 * 1024 });
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limit) {
      done(new AppError('PAYLOAD_TOO_LARGE', `the file is larger than ${this.limit} bytes`));
      return;
    }
    this.hash.update(chunk, () => done(null, chunk));
  }

  override _destroy(err: Error | null, done: (err: Error | null) => void): void {
    if (err) this.hash.drop();
    done(err);
  }

  /** The hex SHA-256 of every byte that passed (once they all have). */
  digest(): Promise<string> {
    return this.hash.digest();
  }

  /** The hash will not be asked for (the upload failed). */
  discard(): void {
    this.hash.drop();
  }
}

/**
 * Reads the first `size` bytes of a stream (fewer if it ends sooner) and returns them with a
 * stream of the whole content, head included. Only the head is ever held in memory.
 */
export async function peekHead(stream: Readable, size: number): Promise<{ head: Buffer; whole: Readable }> {
  const it = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const chunks: Buffer[] = [];
  let length = 0;
  while (length < size) {
    const next = await it.next();
    if (next.done) break;
    chunks.push(next.value);
    length += next.value.length;
  }
  const head = Buffer.concat(chunks);
  const rest: AsyncIterable<Buffer> = { [Symbol.asyncIterator]: () => it };
  async function* all() {
    if (head.length) yield head;
    // Delegating returns the iterator when the consumer stops early, which destroys the source.
    yield* rest;
  }
  return { head: head.subarray(0, size), whole: Readable.from(all(), { objectMode: false }) };
}
