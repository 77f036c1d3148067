import { readFileSync } from 'node:fs';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

export type StubMode = 'stay' | 'crash' | 'ignore-term' | 'with-child';

export interface StubRecord {
  argv: string[];
  pid: number;
  cwd: string;
  /** The pid of the process it started (mode `with-child`). */
  childPid?: number;
  /** Its environment. */
  env: Record<string, string>;
}

/**
 * Writes an executable stand-in for a supervised program (Dendrite, matterbridge): it appends its
 * arguments and pid to `<name>.jsonl` beside itself, then behaves as `mode` says.
 */
export async function writeStub(dir: string, name: string, mode: StubMode = 'stay') {
  const file = path.join(dir, name);
  const records = path.join(dir, `${name}.jsonl`);
  const source = `#!${process.execPath}
const fs = require('node:fs');
const record = { argv: process.argv.slice(2), pid: process.pid, cwd: process.cwd(), env: process.env };
const mode = ${JSON.stringify(mode)};
if (mode === 'crash') {
  fs.appendFileSync(${JSON.stringify(records)}, JSON.stringify(record) + '\\n');
  process.exit(3);
}
if (mode === 'ignore-term') process.on('SIGTERM', () => console.log('ignoring SIGTERM'));
if (mode === 'with-child') {
  const child = require('node:child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' });
  record.childPid = child.pid;
}
fs.appendFileSync(${JSON.stringify(records)}, JSON.stringify(record) + '\\n');
console.log('stub started', process.pid);
setInterval(() => {}, 1 << 30);
`;
  await writeFile(file, source);
  await chmod(file, 0o755);
  return {
    path: file,
    async records(): Promise<StubRecord[]> {
      const text = await readFile(records, 'utf8').catch(() => '');
      return text
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as StubRecord);
    },
  };
}

/** Alive and not a zombie (a container's init may never reap orphans). */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Polls until `check` answers truthy; fails after `timeoutMs` (a guard, not a timing assertion). */
export async function eventually<T>(
  check: () => T | Promise<T>,
  timeoutMs = 15_000,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms: ${check.toString()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
