import { open, stat } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import path from 'node:path';
import type { JobObserver, JobSpec, LogStream } from './executor.port';
import { LineSplitter } from './line-splitter';
import { JOB_FILES_DIR } from './slurm.sbatch';

/** One of the job's output files, read from where the last read stopped. */
export class FileTail {
  private offset = 0;
  private readonly decoder = new StringDecoder('utf8');
  private readonly lines: LineSplitter;
  earlier = false;

  constructor(
    private readonly file: string,
    onLine: (line: string, earlier: boolean) => void,
  ) {
    this.lines = new LineSplitter((line) => onLine(line, this.earlier));
  }

  private reading: Promise<void> = Promise.resolve();

  /** Reads what was appended since the last read (reads never overlap; a failed one is retried). */
  read(): Promise<void> {
    this.reading = this.reading.catch(() => undefined).then(() => this.readNow());
    return this.reading;
  }

  private async readNow(): Promise<void> {
    const size = await stat(this.file).then(
      (s) => s.size,
      () => 0,
    );
    if (size <= this.offset) return;
    const handle = await open(this.file, 'r');
    try {
      const buffer = Buffer.allocUnsafe(Math.min(1 << 20, size - this.offset));
      for (;;) {
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, this.offset);
        if (!bytesRead) break;
        this.offset += bytesRead;
        this.lines.push(this.decoder.write(buffer.subarray(0, bytesRead)));
      }
    } finally {
      await handle.close();
    }
  }

  end(): void {
    this.lines.push(this.decoder.end());
    this.lines.end();
  }
}

/** What the worker keeps of each job it follows. */
export interface Tracked {
  externalId: string;
  dir: string;
  timeoutSeconds: number;
  observer: JobObserver;
  phase: 'pending' | 'running' | 'ending';
  /** The pending reason last reported (undefined: none yet). */
  reason: string | null | undefined;
  stoppedBy: 'canceled' | 'timeout' | null;
  missing: number;
  timer: NodeJS.Timeout | null;
  files: Record<LogStream, FileTail>;
  /** When this worker submitted it (Date.now()); null for a job taken over. */
  submittedAt: number | null;
  /** An array task: its entry in the array's directory, removed once it has ended. */
  arrayLink: string | null;
}

/** A job this worker follows, as it starts to follow it. */
export function newTracked(spec: JobSpec, externalId: string, observer: JobObserver): Tracked {
  const file = (stream: LogStream) =>
    new FileTail(path.join(spec.workDir, JOB_FILES_DIR, stream), (line, earlier) =>
      observer.line(stream, line, earlier),
    );
  return {
    externalId,
    dir: spec.workDir,
    timeoutSeconds: spec.timeoutSeconds,
    observer,
    phase: 'pending',
    reason: undefined,
    stoppedBy: null,
    missing: 0,
    timer: null,
    files: { stdout: file('stdout'), stderr: file('stderr') },
    submittedAt: null,
    arrayLink: null,
  };
}
