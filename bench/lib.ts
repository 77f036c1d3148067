import { createClient } from 'graphql-ws';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { devIssuerUrl, loadDevSigningKey, signUserToken } from '../src/auth/dev-issuer';
import { createLogger } from '../src/common/logger';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../src/db/embedded-postgres';

/** The compiled project root (bench runs from dist/bench). */
export const distRoot = path.resolve(__dirname, '..');

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

export async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  await chmod(dir, 0o755);
  return dir;
}

export interface Child {
  process: ChildProcess;
  port: number;
  url: string;
  stop(): Promise<void>;
}

/** Runs a compiled script of the project as a child process and waits until its port answers. */
export async function startChild(script: string, env: Record<string, string>, port: number): Promise<Child> {
  // BENCH_NODE_ARGS (e.g. `--cpu-prof`) profiles the servers under test.
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, path.join(distRoot, script)], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}`);
    const up = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) throw new Error(`${script} did not start`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    process: child,
    port,
    url,
    stop: async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Resident memory of a process, in bytes. */
export function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

/** Samples a process's RSS until stopped; answers the peak. */
export function rssSampler(pid: number, everyMs = 10): { stop(): number } {
  let peak = rssOf(pid);
  const timer = setInterval(() => (peak = Math.max(peak, rssOf(pid))), everyMs);
  return {
    stop: () => {
      clearInterval(timer);
      return Math.max(peak, rssOf(pid));
    },
  };
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

export function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

export const MiB = 1024 * 1024;

/** An embedded PostgreSQL for one benchmark run, and a service started against it. */
export interface ServiceUnderTest {
  db: EmbeddedDatabase;
  service: Child;
  dataDir: string;
  /** A development user token for `sub`. */
  token(sub: string): Promise<string>;
  stop(): Promise<void>;
}

export async function startService(env: Record<string, string> = {}): Promise<ServiceUnderTest> {
  const dataDir = await tempDir('bench-data-');
  const db = await startEmbeddedPostgres(path.join(dataDir, 'pg'), createLogger('warn'));
  const port = await freePort();
  const service = await startChild(
    'src/main.js',
    // Measured as it runs in production (graphql-js drops its development checks there).
    {
      NODE_ENV: 'production',
      DATA_DIR: dataDir,
      DATABASE_URL: db.url,
      LOG_LEVEL: 'warn',
      ROLES: 'api',
      ...env,
    },
    port,
  );
  const key = await loadDevSigningKey(dataDir);
  return {
    db,
    service,
    dataDir,
    token: (sub) =>
      signUserToken(key, devIssuerUrl(service.url), 'media-platform-dev', { sub, preferred_username: sub }),
    stop: async () => {
      await service.stop();
      await db.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export function printTable(title: string, rows: Record<string, string | number>[]): void {
  console.log(`\n## ${title}\n`);
  const cols = Object.keys(rows[0]);
  console.log(`| ${cols.join(' | ')} |`);
  console.log(`| ${cols.map(() => '---').join(' | ')} |`);
  for (const r of rows) console.log(`| ${cols.map((c) => r[c]).join(' | ')} |`);
}

/** Milliseconds on a monotonic clock. */
export const now = (): number => Number(process.hrtime.bigint()) / 1e6;

/**
 * A client of a service's jobs: GraphQL over HTTP, a model whose command is `command`, and the
 * `jobs` subscription's events with the time each arrived (`eventOf` waits for one).
 */
export async function jobsClient(url: string, auth: string, command: string) {
  const gql = async (query: string, variables: Record<string, unknown> = {}) => {
    const res = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as {
      data?: Record<string, { id: string; job?: { id: string } }>;
      errors?: unknown;
    };
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data!;
  };
  const { createModel } = await gql(
    'mutation ($c: String!) { createModel(input: { name: "trivial", container: "local", command: $c, args: [] }) { id } }',
    { c: command },
  );
  /** Creates a deployment of the model; answers its job id. */
  const create = async () =>
    (
      await gql(
        'mutation ($m: ID!) { createDeployment(input: { name: "b", modelId: $m, args: {} }) { job { id } } }',
        {
          m: createModel.id,
        },
      )
    ).createDeployment.job!.id;

  // Events per job id, with the time each arrived.
  const arrivals = new Map<string, Map<string, number>>();
  const waiters = new Map<string, () => void>();
  const client = createClient({
    url: `${url.replace('http', 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: auth },
  });
  await new Promise<void>((ready, reject) => {
    client.subscribe<{ jobs: { id: string; status: string } }>(
      { query: 'subscription { jobs { id status } }' },
      {
        next: ({ data }) => {
          const { id, status } = data!.jobs;
          const seen = arrivals.get(id) ?? new Map<string, number>();
          seen.set(status, now());
          arrivals.set(id, seen);
          waiters.get(`${id}:${status}`)?.();
        },
        error: reject,
        complete: () => undefined,
      },
    );
    setTimeout(ready, 300);
  });
  const eventOf = (id: string, status: string) =>
    arrivals.get(id)?.has(status)
      ? Promise.resolve()
      : new Promise<void>((resolve) => waiters.set(`${id}:${status}`, resolve));
  /** `n` jobs one at a time: ms from sending createDeployment to their RUNNING and SUCCEEDED events. */
  const latencies = async (n: number, createOne = create) => {
    const running: number[] = [];
    const succeeded: number[] = [];
    for (let i = 0; i < n; i++) {
      const start = now();
      const id = await createOne();
      await eventOf(id, 'SUCCEEDED');
      const seen = arrivals.get(id)!;
      running.push(seen.get('RUNNING')! - start);
      succeeded.push(seen.get('SUCCEEDED')! - start);
    }
    return { running, succeeded };
  };
  return { gql, create, arrivals, eventOf, latencies, dispose: () => client.dispose() };
}
