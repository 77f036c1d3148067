/**
 * Resource limits of a local job, applied without root (it imports nothing but Node: the launcher
 * loads it). Two layers:
 *
 * - the kernel's per-process limits, set by `prlimit` (util-linux) before the program starts:
 *   RLIMIT_NOFILE (open files), RLIMIT_NPROC (the user's processes; not enforced for root). Not
 *   RLIMIT_DATA: it counts address space V8 reserves but never touches (WebAssembly's guard
 *   regions; on Node 24 tesseract's OCR died of SIGTRAP under a 2 GB one), so memory is held by
 *   the watch, on what is resident;
 * - a watch over the job's whole process tree (every 100 ms): its resident memory together and its
 *   number of processes. Past a limit the job's process group is killed, and the exit says which
 *   limit it was. It also notes the largest allocation it saw, so that a program that failed on
 *   its own at the kernel's limit can be told apart.
 */
import { readdirSync, readFileSync } from 'node:fs';

export interface JobLimits {
  /** Bytes; 0: none. */
  memoryBytes: number;
  /** 0: none. */
  openFiles: number;
  /** 0: none. */
  processes: number;
  /** The `prlimit` program, when there is one. */
  prlimit: string | null;
}

/** What the watch saw of a job. */
export interface LimitReport {
  /** The limit the job was stopped for. */
  exceeded: 'memory' | 'processes' | null;
  /** The largest allocation (VmData) of any of its processes, in bytes. */
  peakDataBytes: number;
}

const WATCH_MS = 100;

/** The argv that runs `command` under the kernel's per-process limits. */
export function limitedArgv(command: string, args: string[], limits: JobLimits): [string, string[]] {
  const options = [
    limits.openFiles ? `--nofile=${limits.openFiles}` : null,
    limits.processes ? `--nproc=${limits.processes}` : null,
  ].filter((o): o is string => o !== null);
  if (!limits.prlimit || !options.length) return [command, args];
  return [limits.prlimit, [...options, '--', command, ...args]];
}

/**
 * Watches the process tree under `pid`; calls `stop` once when a limit is passed. Answers a
 * function that ends the watch and reports what it saw.
 */
export function watchLimits(pid: number, limits: JobLimits, stop: () => void): () => LimitReport {
  const report: LimitReport = { exceeded: null, peakDataBytes: 0 };
  const check = () => {
    const tree = treeOf(pid);
    if (!tree.length) return;
    let rss = 0;
    for (const p of tree) {
      rss += p.rssBytes;
      report.peakDataBytes = Math.max(report.peakDataBytes, p.dataBytes);
    }
    if (report.exceeded) return;
    if (limits.memoryBytes && rss > limits.memoryBytes) report.exceeded = 'memory';
    else if (limits.processes && tree.length > limits.processes) report.exceeded = 'processes';
    if (report.exceeded) stop();
  };
  const timer = setInterval(check, WATCH_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    return report;
  };
}

interface ProcessUse {
  rssBytes: number;
  dataBytes: number;
}

/** The processes of the tree under `root` (through /proc/<pid>/task/<tid>/children), with their memory. */
function treeOf(root: number): ProcessUse[] {
  const out: ProcessUse[] = [];
  const pending = [root];
  while (pending.length && out.length < 100_000) {
    const pid = pending.pop()!;
    let status: string;
    try {
      status = readFileSync(`/proc/${pid}/status`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    out.push({ rssBytes: kib(status, 'VmRSS'), dataBytes: kib(status, 'VmData') });
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tasks) {
      try {
        for (const child of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' '))
          if (child.trim()) pending.push(Number(child));
      } catch {
        // the thread ended meanwhile
      }
    }
  }
  return out;
}

function kib(status: string, field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  return m ? Number(m[1]) * 1024 : 0;
}
