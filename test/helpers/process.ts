import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..');

export interface Spawned {
  child: ChildProcess;
  /** Resolves with the first stdout line matching `pattern`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  exited: Promise<number | null>;
  output(): string;
}

/** Runs a TypeScript entry point of the project in a real child process. */
export function spawnTs(entry: string, args: string[], env: Record<string, string>): Spawned {
  return spawnCommand(process.execPath, ['-r', '@swc-node/register', path.join(root, entry), ...args], env);
}

/**
 * Runs a command in the project's folder in a real child process; `detached`, it leads a process
 * group of its own, as a command started in a terminal does (Ctrl-C signals that whole group).
 */
export function spawnCommand(
  command: string,
  args: string[],
  env: Record<string, string>,
  { detached = false } = {},
): Spawned {
  const child = spawn(command, args, {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached,
  });
  let out = '';
  const listeners: (() => void)[] = [];
  const onData = (d: Buffer) => {
    out += d.toString();
    listeners.forEach((l) => l());
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return {
    child,
    exited,
    output: () => out,
    waitFor: (pattern, timeoutMs = 60000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const line = out.split('\n').find((l) => pattern.test(l));
          if (line !== undefined) {
            clearTimeout(timer);
            resolve(line);
            return true;
          }
          return false;
        };
        const timer = setTimeout(
          () => reject(new Error(`timed out waiting for ${pattern}; output:\n${out}`)),
          timeoutMs,
        );
        if (!check()) listeners.push(() => void check());
        void exited.then((code) => {
          if (!check()) reject(new Error(`process exited (${code}) before ${pattern}; output:\n${out}`));
        });
      }),
  };
}

/** Starts src/main.ts and resolves with its port once it listens. */
export async function spawnService(env: Record<string, string>): Promise<Spawned & { port: number }> {
  const s = spawnTs('src/main.ts', [], { PORT: '0', BRIDGE_PORT: '0', LOG_LEVEL: 'info', ...env });
  const line = await s.waitFor(/"API listening"/);
  return { ...s, port: (JSON.parse(line) as { port: number }).port };
}
