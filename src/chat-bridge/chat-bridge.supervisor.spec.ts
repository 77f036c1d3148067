import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../common/logger';
import { eventually, isAlive, writeStub } from '../../test/helpers/stub-process';
import { Supervisor, SupervisorGroup, type SupervisorOptions } from './chat-bridge.supervisor';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'supervisor-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const options = (argv: string[], extra: Partial<SupervisorOptions> = {}): SupervisorOptions => ({
  argv,
  env: { PATH: '/usr/bin:/bin', ONLY: 'this' },
  cwd: dir,
  logFile: path.join(dir, 'process.log'),
  log: createLogger('silent'),
  minBackoffMs: 20,
  maxBackoffMs: 100,
  ...extra,
});

describe('Supervisor', () => {
  it('runs the argv without a shell, in cwd, with output appended to the log file', async () => {
    const stub = await writeStub(dir, 'program');
    const supervisor = new Supervisor(options([stub.path, '--flag', 'a b; rm -rf /', '$HOME']));
    supervisor.start();
    try {
      const [record] = await eventually(() => stub.records().then((r) => (r.length ? r : null)));
      expect(record).toEqual({
        argv: ['--flag', 'a b; rm -rf /', '$HOME'],
        pid: supervisor.pid,
        cwd: dir,
        // Exactly the environment it was given, none of this process's.
        env: { PATH: '/usr/bin:/bin', ONLY: 'this' },
      });
      expect(supervisor.state).toBe('running');
      await eventually(async () =>
        (await readFile(path.join(dir, 'process.log'), 'utf8')).includes('stub started'),
      );
    } finally {
      await supervisor.stop();
    }
  });

  it('restarts the program when it is killed, and stops it for good on stop()', async () => {
    const stub = await writeStub(dir, 'program');
    const supervisor = new Supervisor(options([stub.path]));
    supervisor.start();
    const first = await eventually(() => stub.records().then((r) => r[0]));
    process.kill(first.pid, 'SIGKILL');
    const second = await eventually(() => stub.records().then((r) => r[1]));
    expect(second.pid).not.toBe(first.pid);
    expect(isAlive(first.pid)).toBe(false);
    await eventually(() => supervisor.state === 'running' && supervisor.pid === second.pid);
    expect(supervisor.starts).toBe(2);

    await supervisor.stop();
    expect(supervisor.state).toBe('stopped');
    expect(isAlive(second.pid)).toBe(false);
    // Longer than any backoff: a stopped program is not started again.
    await new Promise((r) => setTimeout(r, 300));
    expect(await stub.records()).toHaveLength(2);
  });

  it('gives up after a run of quick crashes and records the state', async () => {
    const stub = await writeStub(dir, 'program', 'crash');
    const supervisor = new Supervisor(options([stub.path], { maxQuickCrashes: 3 }));
    supervisor.start();
    await eventually(() => supervisor.state === 'failed');
    expect(await stub.records()).toHaveLength(3);
    expect(supervisor.starts).toBe(3);
  });

  it('gives up on a program that cannot be started', async () => {
    const supervisor = new Supervisor(options([path.join(dir, 'missing')], { maxQuickCrashes: 2 }));
    supervisor.start();
    await eventually(() => supervisor.state === 'failed');
  });

  it('sends SIGKILL when SIGTERM is ignored beyond the stop bound', async () => {
    const stub = await writeStub(dir, 'program', 'ignore-term');
    const supervisor = new Supervisor(options([stub.path], { stopTimeoutMs: 200 }));
    supervisor.start();
    const { pid } = await eventually(() => stub.records().then((r) => r[0]));
    await supervisor.stop();
    expect(isAlive(pid)).toBe(false);
    expect(await readFile(path.join(dir, 'process.log'), 'utf8')).toContain('ignoring SIGTERM');
  });

  it('stops what the program started (its process group)', async () => {
    const stub = await writeStub(dir, 'program', 'with-child');
    const supervisor = new Supervisor(options([stub.path]));
    supervisor.start();
    const { pid, childPid } = await eventually(() => stub.records().then((r) => r[0]));
    expect(isAlive(childPid!)).toBe(true);
    await supervisor.stop();
    expect(isAlive(pid)).toBe(false);
    await eventually(() => !isAlive(childPid!));
  });
});

describe('SupervisorGroup', () => {
  it('keeps one supervisor per key and stops them all', async () => {
    const stub = await writeStub(dir, 'program');
    const group = new SupervisorGroup();
    const a = group.start('a', options([stub.path, 'a']));
    expect(group.start('a', options([stub.path, 'again']))).toBe(a);
    group.start('b', options([stub.path, 'b']));
    const records = await eventually(() => stub.records().then((r) => (r.length === 2 ? r : null)));
    expect(records.map((r) => r.argv[0]).sort()).toEqual(['a', 'b']);
    await group.stopAll();
    expect(group.get('a')).toBeUndefined();
    for (const r of records) expect(isAlive(r.pid)).toBe(false);
  });
});
