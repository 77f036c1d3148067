import type { LogStream } from '../executors/executor.port';

/** How much of a job's output is stored with it. */
export const LOG_TAIL_BYTES = 64 * 1024;
/**
 * Log lines published at once stay under PostgreSQL's 8000-byte NOTIFY payload: sizes are of the
 * JSON actually sent (escapes included), with room for the envelope.
 */
const BATCH_BYTES = 7000;
const PUBLISHED_LINE_BYTES = 2000;
const FLUSH_MS = 100;
const SAVE_MS = 5000;

export interface LogLine {
  stream: LogStream;
  line: string;
}

export interface JobLogSink {
  /** Sends a batch of lines to subscribers. */
  publish(lines: LogLine[]): Promise<void>;
  /** Stores the tail while the job runs. */
  save(tail: string): Promise<void>;
  /** Hears what could not be published or saved (the job goes on). */
  failed(err: unknown): void;
}

/** The line as published: cut until its JSON form fits PUBLISHED_LINE_BYTES. */
function publishable(line: string): { line: string; size: number } {
  let cut = line;
  let size = Buffer.byteLength(JSON.stringify(cut));
  while (size > PUBLISHED_LINE_BYTES) {
    cut = cut.slice(0, Math.floor(cut.length / 2));
    size = Buffer.byteLength(JSON.stringify(cut));
  }
  return { line: cut, size: size + 32 };
}

/**
 * The output of one running job: published to subscribers in small batches, the last
 * LOG_TAIL_BYTES kept for the job record, and the last stdout line kept as the candidate for
 * the job's JSON result.
 */
export class JobLog {
  private readonly lines: string[] = [];
  private bytes = 0;
  private batch: LogLine[] = [];
  private batchBytes = 0;
  private flushTimer: NodeJS.Timeout | undefined;
  private readonly saveTimer: NodeJS.Timeout;
  private dirty = false;
  private pending: Promise<void> = Promise.resolve();
  private saving: Promise<void> = Promise.resolve();
  lastStdout = '';

  constructor(private readonly sink: JobLogSink) {
    this.saveTimer = setInterval(() => {
      if (!this.dirty) return;
      this.dirty = false;
      this.saving = this.sink.save(this.tail()).catch((err) => this.sink.failed(err));
    }, SAVE_MS);
    this.saveTimer.unref();
  }

  /**
   * A line the program printed. `earlier` lines (printed before this worker followed the job)
   * belong to the tail and the result, but were published already.
   */
  line(stream: LogStream, line: string, earlier = false): void {
    if (stream === 'stdout' && line.trim()) this.lastStdout = line;
    this.lines.push(line);
    this.bytes += Buffer.byteLength(line) + 1;
    while (this.bytes > LOG_TAIL_BYTES && this.lines.length > 1)
      this.bytes -= Buffer.byteLength(this.lines.shift()!) + 1;
    this.dirty = true;
    if (earlier) return;

    const { line: published, size } = publishable(line);
    if (this.batchBytes + size > BATCH_BYTES) this.flushBatch();
    this.batch.push({ stream, line: published });
    this.batchBytes += size;
    this.flushTimer ??= setTimeout(() => this.flushBatch(), FLUSH_MS);
  }

  tail(): string {
    return this.lines.join('\n');
  }

  /** The JSON a program printed as its last stdout line, if that line is JSON. */
  result(): unknown {
    try {
      const value: unknown = JSON.parse(this.lastStdout);
      return typeof value === 'object' && value !== null ? value : null;
    } catch {
      return null;
    }
  }

  /**
   * The job's output is complete: stops saving the tail (the job's last transition stores it, and
   * no periodic save may land after that), and publishes what is buffered.
   */
  async end(): Promise<void> {
    clearInterval(this.saveTimer);
    this.flushBatch();
    await Promise.all([this.pending, this.saving]);
  }

  private flushBatch(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (!this.batch.length) return;
    const batch = this.batch;
    this.batch = [];
    this.batchBytes = 0;
    // In order, one batch after the other; a lost batch only costs subscribers some lines.
    this.pending = this.pending.then(() => this.sink.publish(batch).catch((err) => this.sink.failed(err)));
  }
}
