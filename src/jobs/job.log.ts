import type { LogStream } from '../executors/executor.port';

/** How much of a job's output is stored with it. */
export const LOG_TAIL_BYTES = 64 * 1024;
/** Log lines published at once stay under PostgreSQL's 8000-byte NOTIFY payload. */
const BATCH_BYTES = 6000;
const PUBLISHED_LINE = 2000;
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
  lastStdout = '';

  constructor(private readonly sink: JobLogSink) {
    this.saveTimer = setInterval(() => {
      if (!this.dirty) return;
      this.dirty = false;
      void this.sink.save(this.tail()).catch(() => undefined);
    }, SAVE_MS);
    this.saveTimer.unref();
  }

  line(stream: LogStream, line: string): void {
    if (stream === 'stdout' && line.trim()) this.lastStdout = line;
    this.lines.push(line);
    this.bytes += Buffer.byteLength(line) + 1;
    while (this.bytes > LOG_TAIL_BYTES && this.lines.length > 1)
      this.bytes -= Buffer.byteLength(this.lines.shift()!) + 1;
    this.dirty = true;

    const published = line.length > PUBLISHED_LINE ? line.slice(0, PUBLISHED_LINE) : line;
    const size = Buffer.byteLength(published) + 32;
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

  /** Publishes what is buffered and waits until everything published so far went out. */
  async flush(): Promise<void> {
    this.flushBatch();
    await this.pending;
  }

  stop(): void {
    clearTimeout(this.flushTimer);
    clearInterval(this.saveTimer);
  }

  private flushBatch(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (!this.batch.length) return;
    const batch = this.batch;
    this.batch = [];
    this.batchBytes = 0;
    // In order, one batch after the other; a lost batch only costs subscribers some lines.
    this.pending = this.pending.then(() => this.sink.publish(batch).catch(() => undefined));
  }
}
