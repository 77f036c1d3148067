import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { devIssuerUrl, loadDevSigningKey, signUserToken } from '../src/auth/dev-issuer';
import { freePort } from '../src/db/embedded-postgres';
import { startTestApp } from './helpers/app';
import { createTestDatabase } from './helpers/db';
import { TestIssuer } from './helpers/oidc-issuer';
import { spawnCommand, spawnService, spawnTs } from './helpers/process';

jest.setTimeout(120_000);

async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  await chmod(dir, 0o755); // as root, PostgreSQL runs as `postgres` and must reach it
  return dir;
}

function post(port: number, body: string, headers: Record<string, string>) {
  const req = http.request({
    port,
    host: '127.0.0.1',
    method: 'POST',
    path: '/graphql',
    headers: {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      ...headers,
    },
  });
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let data = '';
      res.on('data', (c) => (data += c));
      res.on('end', () => resolve({ status: res.statusCode!, body: data }));
    });
    req.on('error', reject);
  });
  return { req, response };
}

describe('the service process', () => {
  it('on SIGTERM stops accepting, lets an in-flight request finish, and exits 0', async () => {
    const issuer = await TestIssuer.start();
    const svc = await spawnService({ DATABASE_URL: await createTestDatabase(), OIDC_ISSUER: issuer.issuer });
    try {
      const body = JSON.stringify({ query: '{ me { userId } }' });
      const { req, response } = post(svc.port, body, {
        authorization: `Bearer ${await issuer.token('inflight')}`,
      });
      req.write(body.slice(0, 10)); // the request is in flight: headers sent, body pending
      await new Promise((r) => setTimeout(r, 300));
      svc.child.kill('SIGTERM');
      await svc.waitFor(/"shutting down"/);
      // New connections are refused while the old request is still being served.
      await expect(fetch(`http://127.0.0.1:${svc.port}/healthz`)).rejects.toThrow();
      req.end(body.slice(10));
      const res = await response;
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body)).toEqual({ data: { me: { userId: 'inflight' } } });
      expect(await svc.exited).toBe(0);
      expect(svc.output()).toContain('stopped cleanly');
    } finally {
      svc.child.kill('SIGKILL');
      await issuer.stop();
    }
  });

  it('runs on the embedded PostgreSQL under DATA_DIR, which persists across restarts', async () => {
    const dataDir = await tempDir('media-embedded-');
    const publicUrl = 'http://127.0.0.1:1';
    const env = { DATA_DIR: dataDir, PUBLIC_URL: publicUrl };
    try {
      const first = await spawnService(env);
      const key = await loadDevSigningKey(dataDir);
      const token = await signUserToken(key, devIssuerUrl(publicUrl), 'media-platform-dev', {
        sub: 'persisted',
      });
      const created = await fetch(`http://127.0.0.1:${first.port}/api/v1/teams`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Survives restarts' }),
      });
      expect(created.status).toBe(201);
      const jwks = (await (await fetch(`http://127.0.0.1:${first.port}/oidc/jwks`)).json()) as {
        keys: { kid: string }[];
      };
      expect(jwks.keys[0].kid).toBe(key.kid);
      first.child.kill('SIGINT');
      expect(await first.exited).toBe(0);
      expect(existsSync(path.join(dataDir, 'postgres', 'data', 'postmaster.pid'))).toBe(false);

      const second = await spawnService(env);
      try {
        const teams = await fetch(`http://127.0.0.1:${second.port}/api/v1/teams`, {
          headers: { authorization: `Bearer ${token}` },
        });
        expect(((await teams.json()) as { name: string }[]).map((t) => t.name)).toEqual([
          'Survives restarts',
        ]);
      } finally {
        second.child.kill('SIGTERM');
        expect(await second.exited).toBe(0);
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('answers 503 while the database is down and recovers without a restart', async () => {
    const pgDir = await tempDir('media-outage-');
    const port = await freePort();
    const startPg = async () => {
      const pg = spawnTs('test/helpers/pg-child.ts', [pgDir, String(port)], {});
      const url = await pg.waitFor(/^postgres:\/\//);
      return { pg, url };
    };
    let { pg, url } = await startPg();
    const app = await startTestApp({}, { databaseUrl: url });
    try {
      const auth = `Bearer ${await app.tokenFor('outage')}`;
      expect((await app.http().get('/readyz')).status).toBe(200);
      expect(
        (await app.http().post('/api/v1/teams').set('authorization', auth).send({ name: 'before' })).status,
      ).toBe(201);

      pg.child.kill('SIGTERM');
      await pg.exited;
      const ready = await app.http().get('/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.error.code).toBe('UNAVAILABLE');
      const during = await app.http().get('/api/v1/teams').set('authorization', auth);
      expect(during.status).toBe(503);
      expect(during.body.error.code).toBe('UNAVAILABLE');
      expect(during.headers['retry-after']).toBeDefined();

      ({ pg, url } = await startPg());
      let status = 0;
      for (let i = 0; i < 50 && status !== 200; i++) {
        status = (await app.http().get('/readyz')).status;
        if (status !== 200) await new Promise((r) => setTimeout(r, 200));
      }
      expect(status).toBe(200);
      const after = await app.http().get('/api/v1/teams').set('authorization', auth);
      expect(after.status).toBe(200);
      expect(after.body.map((t: { name: string }) => t.name)).toEqual(['before']);
    } finally {
      await app.close();
      pg.child.kill('SIGTERM');
      await pg.exited;
      await rm(pgDir, { recursive: true, force: true });
    }
  });
});

/** A test that failed midway may leave the embedded server (in a process group of its own) running. */
async function stopLeftoverPostgres(dataDir: string): Promise<void> {
  const pidFile = path.join(dataDir, 'postgres', 'data', 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
  try {
    process.kill(pid, 'SIGQUIT'); // immediate shutdown
  } catch {
    return;
  }
  while (existsSync(pidFile)) await new Promise((r) => setTimeout(r, 100));
}

describe('`npm start` in a terminal', () => {
  // Ctrl-C signals the terminal's whole foreground process group: npm, the service and, unless
  // it runs apart, the embedded PostgreSQL, which then stopped under the service's connections.
  it.each(['SIGINT', 'SIGTERM'] as const)(
    'stops cleanly on %s to its whole process group',
    async (signal) => {
      const dataDir = await tempDir('media-ctrl-c-');
      const port = await freePort();
      // Leads its own process group, as in a terminal; builds first if a source changed.
      const s = spawnCommand(
        'npm',
        ['start'],
        { DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'info' },
        {
          detached: true,
        },
      );
      try {
        await s.waitFor(/"API listening"/, 240_000);
        expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
        process.kill(-s.child.pid!, signal);
        expect(await s.exited).toBe(0);
        const out = s.output();
        expect(out).toContain('stopped cleanly');
        expect(out).not.toMatch(/Unhandled|error during shutdown|"level":50|\n\s+at /);
        expect(existsSync(path.join(dataDir, 'postgres', 'data', 'postmaster.pid'))).toBe(false);
      } finally {
        if (s.child.exitCode === null) process.kill(-s.child.pid!, 'SIGKILL');
        await stopLeftoverPostgres(dataDir);
        await rm(dataDir, { recursive: true, force: true });
      }
    },
    300_000,
  );

  it('stops cleanly when its embedded PostgreSQL is stopped at the same moment', async () => {
    const dataDir = await tempDir('media-pg-first-');
    const svc = await spawnService({ DATA_DIR: dataDir });
    try {
      // What a signal to a group holding both did before: connections end under the drain (57P01).
      const pidFile = path.join(dataDir, 'postgres', 'data', 'postmaster.pid');
      process.kill(Number((await readFile(pidFile, 'utf8')).split('\n')[0]), 'SIGINT');
      svc.child.kill('SIGINT');
      const code = await svc.exited;
      // With its output, so that a wrong exit says why.
      if (code !== 0) throw new Error(`exited ${code}:\n${svc.output()}`);
      expect(svc.output()).toContain('stopped cleanly');
      // (graphile-worker traces a queue worker that lost its connection on the console itself.)
      expect(svc.output()).not.toMatch(/Unhandled|error during shutdown/);
    } finally {
      if (svc.child.exitCode === null) svc.child.kill('SIGKILL');
      await stopLeftoverPostgres(dataDir);
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
