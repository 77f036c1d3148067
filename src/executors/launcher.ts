/**
 * The local executor's launcher: a small process that starts jobs for the service. Forking copies
 * the parent's page tables, so starting a process from the service itself (hundreds of MB) takes
 * ~15 ms on these machines; from this process it takes ~1 ms. It imports nothing but Node (and
 * job-limits.ts, which imports nothing but Node).
 *
 * IPC protocol (JSON messages):
 *   service -> launcher  {type: 'spawn', id, command, args, cwd, env, limits?}
 *   launcher -> service  {type: 'spawned', id, pid} | {type: 'failed', id, message}
 *                        {type: 'output', id, stream, chunk}      (utf-8 text, in order)
 *                        {type: 'exit', id, code, signal, limits?} (after all output)
 * Stopping a job is not its business: the service signals the job's process group directly.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { limitedArgv, watchLimits, type JobLimits, type LimitReport } from './job-limits';

export interface SpawnRequest {
  type: 'spawn';
  id: string;
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** Resource limits (job-limits.ts); absent: none. */
  limits?: JobLimits;
}

export type LauncherMessage =
  | { type: 'spawned'; id: string; pid: number }
  | { type: 'failed'; id: string; message: string }
  | { type: 'output'; id: string; stream: 'stdout' | 'stderr'; chunk: string }
  | { type: 'exit'; id: string; code: number | null; signal: string | null; limits?: LimitReport };

function send(message: LauncherMessage): void {
  process.send?.(message);
}

/** How long output is still read after the program exited. */
const PIPE_GRACE_MS = 2000;

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** The program's file as `PATH` finds it (what spawn would run), or null. */
function resolveProgram(command: string, pathList: string | undefined): string | null {
  const candidates = command.includes('/')
    ? [command]
    : (pathList ?? '')
        .split(':')
        .filter(Boolean)
        .map((dir) => path.join(dir, command));
  for (const file of candidates) {
    try {
      if (statSync(file).isFile()) {
        accessSync(file, constants.X_OK);
        return file;
      }
    } catch {
      // not this one
    }
  }
  return null;
}

function start(req: SpawnRequest): void {
  let [command, args] = [req.command, req.args];
  if (req.limits?.prlimit) {
    // Found first, so that a missing program is said as plainly as without the wrapper.
    const program = resolveProgram(command, req.env.PATH);
    if (!program) return send({ type: 'failed', id: req.id, message: `spawn ${command} ENOENT` });
    [command, args] = limitedArgv(path.resolve(req.cwd, program), args, req.limits);
  }
  const child = spawn(command, args, {
    cwd: req.cwd,
    env: req.env,
    detached: true, // its own process group, so the whole tree can be stopped
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.once('error', (err) => send({ type: 'failed', id: req.id, message: err.message }));
  let stopWatch: (() => LimitReport) | undefined;
  let limits: LimitReport | undefined;
  child.once('spawn', () => {
    if (req.limits) stopWatch = watchLimits(child.pid!, req.limits, () => killGroup(child.pid!));
    send({ type: 'spawned', id: req.id, pid: child.pid! });
  });
  for (const stream of ['stdout', 'stderr'] as const) {
    child[stream]!.setEncoding('utf8');
    child[stream]!.on('data', (chunk: string) => send({ type: 'output', id: req.id, stream, chunk }));
  }
  let exited: { code: number | null; signal: string | null } | null = null;
  let reported = false;
  const report = () => {
    if (reported || !exited) return;
    reported = true;
    send({ type: 'exit', id: req.id, ...exited, limits });
  };
  child.once('exit', (code, signal) => {
    exited = { code, signal };
    limits = stopWatch?.();
    // What the program left running in its group goes with it; then its pipes close. A process
    // that left the group (setsid) may hold them open: its output is not waited for long.
    killGroup(child.pid!);
    setTimeout(() => {
      child.stdout?.destroy();
      child.stderr?.destroy();
      report();
    }, PIPE_GRACE_MS).unref();
  });
  child.once('close', report);
}

if (require.main === module) {
  process.on('message', (msg: SpawnRequest) => {
    if (msg?.type === 'spawn') start(msg);
  });
  // The service went away: its jobs are reconciled by the next worker; this launcher just leaves.
  process.on('disconnect', () => process.exit(0));
}
