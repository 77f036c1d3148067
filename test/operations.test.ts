import { chmod, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { databaseUrlFile, freePort } from '../src/db/embedded-postgres';
import { createTestDatabase } from './helpers/db';
import { spawnService, spawnTs, type Spawned } from './helpers/process';

/** What an operator runs: the service process, a second process beside it, and the scripts. */

async function run(script: string, args: string[], env: Record<string, string>) {
  const p = spawnTs(script, args, env);
  const code = await p.exited;
  return { code, output: p.output() };
}

async function stop(p: Spawned): Promise<void> {
  p.child.kill('SIGTERM');
  await p.exited;
}

describe('a database that cannot be reached at start', () => {
  it('is one line naming host, port and cause, then exit 2', async () => {
    const port = await freePort(); // nothing listens there
    const p = spawnTs('src/main.ts', [], {
      DATABASE_URL: `postgres://app:pw@127.0.0.1:${port}/media`,
      PORT: '0',
    });
    expect(await p.exited).toBe(2);
    const lines = p.output().trim().split('\n');
    expect(lines).toEqual([
      `cannot reach the database at 127.0.0.1:${port}: connection refused (is PostgreSQL running and listening there?)`,
    ]);
  });

  it('is one line and exit 2 when none is named and no embedded PostgreSQL is installed', async () => {
    // The container image leaves out PostgreSQL's programs (docs/operations.md).
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'media-no-pg-'));
    try {
      const p = spawnTs('src/main.ts', [], {
        DATA_DIR: dataDir,
        PORT: '0',
        NODE_OPTIONS: `--require ${path.join(__dirname, 'fixtures', 'without-embedded-postgres.js')}`,
      });
      expect(await p.exited).toBe(2);
      expect(p.output().trim().split('\n')).toEqual([
        'DATABASE_URL is not set and this install has no embedded PostgreSQL ' +
          `(@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch} is not installed, as in the container image): set DATABASE_URL`,
      ]);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('says so when the server does not answer in time', async () => {
    // A peer that accepts and never speaks: the driver's connection timeout ends it.
    const silent = net.createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const { port } = silent.address() as net.AddressInfo;
    try {
      const p = spawnTs('src/main.ts', [], {
        DATABASE_URL: `postgres://app:pw@127.0.0.1:${port}/media`,
        PORT: '0',
      });
      expect(await p.exited).toBe(2);
      expect(p.output().trim()).toBe(
        `cannot reach the database at 127.0.0.1:${port}: no answer in time (connection timed out)`,
      );
    } finally {
      silent.close();
    }
  });
});

describe('the embedded database, joined by a second process', () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'media-ops-'));
    await chmod(dataDir, 0o755);
  });
  afterAll(() => rm(dataDir, { recursive: true, force: true }));

  it('npm run database-url prints its URL while it runs; a worker-only process joins it and is probed on METRICS_PORT', async () => {
    const port = await freePort();
    const env = { DATA_DIR: dataDir, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` };
    const first = await spawnService(env);
    let worker: Spawned | undefined;
    try {
      const file = databaseUrlFile(dataDir);
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      const printed = await run('scripts/database-url.ts', [], env);
      expect(printed.code).toBe(0);
      const url = printed.output.trim();
      expect(url).toBe((await readFile(file, 'utf8')).trim());
      expect(url).toMatch(/^postgres:\/\/postgres:[^@]+@127\.0\.0\.1:\d+\/media$/);

      const metricsPort = await freePort();
      worker = spawnTs('src/main.ts', [], {
        DATA_DIR: dataDir,
        DATABASE_URL: url,
        ROLES: 'worker',
        METRICS_PORT: String(metricsPort),
        LOG_LEVEL: 'info',
      });
      await worker.waitFor(/"metrics listening"/);
      expect(await (await fetch(`http://127.0.0.1:${metricsPort}/readyz`)).json()).toEqual({
        status: 'ready',
      });
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      expect(metrics).toMatch(/^executor_slots\{executor="local"\} \d+$/m);
      // The worker registered in the same database.
      const client = new Client({ connectionString: url });
      await client.connect();
      try {
        const { rows } = await client.query('select count(*)::int as n from worker_instances');
        expect(rows[0].n).toBeGreaterThanOrEqual(2);
      } finally {
        await client.end();
      }

      // npm run token reads the same configuration, and checks the service accepts its key.
      const token = await run('scripts/token.ts', ['alice'], env);
      expect(token.code).toBe(0);
      const me = await fetch(`http://127.0.0.1:${port}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token.output.trim()}` },
        body: JSON.stringify({ query: '{ me { userId } }' }),
      });
      expect(((await me.json()) as { data: { me: { userId: string } } }).data.me.userId).toBe('alice');
      const elsewhere = await mkdtemp(path.join(os.tmpdir(), 'media-ops-other-'));
      const wrongDir = await run('scripts/token.ts', ['alice'], { ...env, DATA_DIR: elsewhere });
      expect(wrongDir.code).toBe(1);
      expect(wrongDir.output).toContain(`No development signing key in ${elsewhere}`);
      await rm(elsewhere, { recursive: true, force: true });
    } finally {
      if (worker) await stop(worker);
      await stop(first);
    }
    // Stopped: the URL is gone, and both scripts say what is wrong.
    await expect(stat(databaseUrlFile(dataDir))).rejects.toThrow();
    const after = await run('scripts/database-url.ts', [], { DATA_DIR: dataDir });
    expect(after.code).toBe(1);
    expect(after.output).toContain(`The embedded PostgreSQL of ${dataDir} is not running`);
    const token = await run('scripts/token.ts', ['alice'], { ...env });
    expect(token.code).toBe(1);
    expect(token.output).toMatch(
      /The service is not answering at http:\/\/127\.0\.0\.1:\d+\/oidc \(ECONNREFUSED\)/,
    );
  }, 180_000);
});

describe('npm run migrate', () => {
  it('shows, reverts and applies migrations', async () => {
    const env = { DATABASE_URL: await createTestDatabase() };
    const up = await run('scripts/migrate.ts', ['up'], env);
    expect(up.code).toBe(0);
    expect(up.output).toMatch(/^applied Migration\d+/m);
    const status = await run('scripts/migrate.ts', ['status'], env);
    const applied = Number(/(\d+) applied, 0 pending/.exec(status.output)?.[1]);
    expect(applied).toBeGreaterThan(1);

    const down = await run('scripts/migrate.ts', ['down'], env);
    expect(down.code).toBe(0);
    const reverted = /^reverted (Migration\S+)$/m.exec(down.output)?.[1];
    expect(reverted).toBeDefined();
    const after = await run('scripts/migrate.ts', ['status'], env);
    expect(after.output).toContain(`pending  ${reverted}`);
    expect(after.output).toContain(`${applied - 1} applied, 1 pending`);

    const again = await run('scripts/migrate.ts', ['up'], env);
    expect(again.output.trim()).toBe(`applied ${reverted}`);
    expect((await run('scripts/migrate.ts', ['up'], env)).output.trim()).toBe('nothing to apply');
  }, 120_000);

  it('answers usage for anything else, and one line for an unreachable database', async () => {
    expect(await run('scripts/migrate.ts', ['sideways'], {})).toEqual({
      code: 2,
      output: 'usage: npm run migrate -- up | down | status\n',
    });
    const port = await freePort();
    const res = await run('scripts/migrate.ts', ['status'], {
      DATABASE_URL: `postgres://a:b@127.0.0.1:${port}/x`,
    });
    expect(res.code).toBe(2);
    expect(res.output).toBe(
      `cannot reach the database at 127.0.0.1:${port}: connection refused (is PostgreSQL running and listening there?)\n`,
    );
  });
});
