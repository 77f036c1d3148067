import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { AppError } from '../common/errors';
import { StreamHash } from './media.hasher';

/**
 * The one stage between a client's bytes and storage: counts them, fails as soon as they pass
 * the limit, hashes them (on a worker thread, StreamHash) and passes the very same buffers on:
 * no copy, no concatenation, no async iteration per chunk (each of those showed in the upload's
 * profile). The first bytes are held until `head()` has them, for sniffing the type before the
 * storage key is known; at most about one high-water mark of bytes is held meanwhile.
 */
export class Meter extends Readable {
  bytes = 0;
  private readonly hash = new StreamHash();
  private readonly first: Promise<Buffer>;
  private headChunks: Buffer[] | null = [];
  private headDone!: () => void;
  private headFailed!: (err: Error) => void;
  /** The source is paused until the hash has room for the last chunk. */
  private hashing = false;
  /** The source is paused until this stream's reader wants more. */
  private full = false;

  constructor(
    private readonly source: Readable,
    private readonly limit: number,
    private readonly headSize: number,
  ) {
    super({ highWaterMark: 1024 * 1024 });
    this.first = new Promise((resolve, reject) => {
      this.headDone = () => {
        const chunks = this.headChunks ?? [];
        this.headChunks = null;
        // Copied: the chunks themselves go on to storage.
        resolve(Buffer.from(Buffer.concat(chunks).subarray(0, headSize)));
      };
      this.headFailed = reject;
    });
    this.first.catch(() => undefined); // the caller may be past waiting for it
    // Failures reach the caller through head(), `errored` and the storage's pipeline.
    this.on('error', () => undefined);
    source.on('data', this.onData);
    source.once('end', () => {
      if (this.headChunks) this.headDone();
      this.push(null);
    });
    source.once('error', (err) => this.destroy(err));
    source.once('close', () => {
      if (!source.readableEnded) this.destroy(interrupted(null));
    });
    source.resume();
  }

  /** The first `headSize` bytes (fewer if the stream is shorter); they stay in the stream too. */
  head(): Promise<Buffer> {
    return this.first;
  }

  private readonly onData = (chunk: Buffer): void => {
    this.bytes += chunk.length;
    if (this.bytes > this.limit) {
      this.destroy(new AppError('PAYLOAD_TOO_LARGE', `the file is larger than ${this.limit} bytes`));
      return;
    }
    if (this.headChunks) {
      this.headChunks.push(chunk);
      if (this.bytes >= this.headSize) this.headDone();
    }
    // The source waits while the chunk waits for room in the hash's ring.
    if (!this.hash.update(chunk, this.hashed)) this.hashing = true;
    if (!this.push(chunk)) this.full = true;
    if (this.full || this.hashing) this.source.pause();
  };

  private readonly hashed = (): void => {
    this.hashing = false;
    this.resumeSource();
  };

  override _read(): void {
    this.full = false;
    this.resumeSource();
  }

  private resumeSource(): void {
    if (!this.full && !this.hashing && !this.destroyed) this.source.resume();
  }

  override _destroy(err: Error | null, done: (err: Error | null) => void): void {
    this.source.off('data', this.onData);
    if (err) {
      this.hash.drop();
      this.headFailed(err);
    }
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

/** A client that stops sending mid-file is the request's fault, not the server's. */
export function interrupted(err: unknown): AppError {
  if (err instanceof AppError) return err;
  return new AppError('BAD_REQUEST', 'the upload was interrupted before the file was complete');
}

/**
 * The SHA-256 of a stream's bytes, read to the end and dropped, hashed on the worker as uploads
 * are (a repeated request compared with the first); over `limit` bytes, 413 as an upload would be.
 */
export async function sha256Of(source: Readable, limit: number): Promise<string> {
  const meter = new Meter(source, limit, 0);
  try {
    await finished(meter.resume());
    return await meter.digest();
  } catch (err) {
    meter.discard();
    throw meter.errored ?? err;
  }
}
