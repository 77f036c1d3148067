import { chmod, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/db/embedded-postgres';
import { spawnTs, type Spawned } from './process';

/**
 * An embedded PostgreSQL of a test's own (not the shared one of the other suites), in a child
 * process, so that the test can freeze it (SIGSTOP), kill it and start it again on the same port.
 */
export interface OwnPostgres {
  url: string;
  /** Stops every process of the server (SIGSTOP): connections stay open, nothing answers. */
  freeze(): Promise<void>;
  thaw(): Promise<void>;
  /** Stops the server (a clean fast shutdown), keeping its data. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** Stops it and removes its data. */
  remove(): Promise<void>;
}

export async function startOwnPostgres(): Promise<OwnPostgres> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'media-own-pg-'));
  await chmod(dir, 0o755); // as root, PostgreSQL runs as `postgres` and must reach it
  const port = await freePort();
  let child: Spawned | null = null;
  let frozen: number[] = [];
  const start = async () => {
    child = spawnTs('test/helpers/pg-child.ts', [dir, String(port)], {});
    return child.waitFor(/^postgres:\/\//);
  };
  const stop = async () => {
    if (!child) return;
    child.child.kill('SIGTERM');
    await child.exited;
    child = null;
  };
  const url = await start();
  const signal = (pids: number[], sig: NodeJS.Signals) => {
    for (const pid of pids) {
      try {
        process.kill(pid, sig);
      } catch {
        // gone meanwhile
      }
    }
  };
  return {
    url,
    freeze: async () => {
      // The postmaster first, so that it forks no new backend while its children are stopped.
      const postmaster = Number(
        (await readFile(path.join(dir, 'postgres', 'data', 'postmaster.pid'), 'utf8')).split('\n')[0],
      );
      signal([postmaster], 'SIGSTOP');
      frozen = [postmaster, ...(await childrenOf(postmaster))];
      signal(frozen, 'SIGSTOP');
    },
    thaw: async () => {
      signal(frozen, 'SIGCONT');
      frozen = [];
    },
    stop,
    start: async () => {
      await start();
    },
    remove: async () => {
      if (frozen.length) signal(frozen, 'SIGCONT');
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The processes whose parent is `pid` (PostgreSQL's backends and helpers). */
async function childrenOf(pid: number): Promise<number[]> {
  const out: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // Fields after the `(comm)`: state, ppid.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid === pid) out.push(Number(entry));
  }
  return out;
}
