import { createClient } from 'graphql-ws';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { devIssuerUrl, loadDevSigningKey, signUserToken } from '../src/auth/dev-issuer';
import { createLogger } from '../src/common/logger';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../src/db/embedded-postgres';
import { Client } from 'pg';

/** The compiled project root (bench runs from dist/bench). */
export const distRoot = path.resolve(__dirname, '..');

/**
 * Smoke mode (`npm run bench -- <name> --smoke`, which CI runs): every benchmark runs end to end
 * on tiny sizes in seconds, so none rots; its figures mean nothing and nothing is judged.
 */
export const SMOKE = process.argv.includes('--smoke') || process.env.BENCH_SMOKE === '1';

/** A numeric setting: the environment's value, else the smoke or the full default. */
export function setting(name: string, full: number, smoke: number): number {
  const v = process.env[name];
  return v !== undefined ? Number(v) : SMOKE ? smoke : full;
}

/** The one-minute load average, to print beside every figure (the machine is shared). */
export function load(): number {
  return os.loadavg()[0];
}

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

/**
 * The Node flags `npm start` gives the service (its heap growing factor: docs/performance.md,
 * "Memory"), read from the package.json beside the build, so that the service is measured as it is
 * started.
 */
export function startFlags(root = distRoot): string[] {
  const pkg = JSON.parse(readFileSync(path.join(root, '..', 'package.json'), 'utf8')) as {
    scripts: { start: string };
  };
  const flags = /\bnode\s+(.*?)\s*dist\/src\/main\.js/.exec(pkg.scripts.start)?.[1] ?? '';
  return flags.split(/\s+/).filter(Boolean);
}

/** Runs a compiled script of the project as a child process and waits until its port answers. */
export async function startChild(
  script: string,
  env: Record<string, string>,
  port: number,
  /** Another build's output directory (an earlier commit's `dist`). */
  root = distRoot,
): Promise<Child> {
  // BENCH_NODE_ARGS (e.g. `--cpu-prof`) profiles the servers under test.
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const startArgs = script === 'src/main.js' ? startFlags(root) : [];
  const child = spawn(process.execPath, [...startArgs, ...nodeArgs, path.join(root, script)], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env, PORT: String(port) },
    stdio: ['ignore', process.env.BENCH_CHILD_STDOUT ? 'inherit' : 'ignore', 'inherit'],
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

/** CPU time a process has used so far (user + system), in milliseconds. */
export function cpuMsOf(pid: number): number {
  // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}
/** Linux's USER_HZ, 100 on every common platform. */
const CLOCK_TICKS = 100;

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
  /** The service's environment (another build may be started with it). */
  env: Record<string, string>;
  /** A development user token for `sub`. */
  token(sub: string): Promise<string>;
  stop(): Promise<void>;
}

export async function startService(
  env: Record<string, string> = {},
  opts: {
    preload?: string[];
    /** Told of each chunk PostgreSQL writes to its log (plans that auto_explain logs). */
    onPgLog?: (text: string) => void;
  } = {},
): Promise<ServiceUnderTest> {
  const dataDir = await tempDir('bench-data-');
  const pgDir = path.join(dataDir, 'pg');
  const pgLog = () => {
    const log = createLogger('warn');
    const onLog = opts.onPgLog;
    // The server's log comes as debug lines `{ pg }` (src/db/embedded-postgres.ts).
    if (onLog)
      log.debug = ((o: { pg?: unknown } | null) => {
        if (typeof o?.pg === 'string') onLog(o.pg + '\n');
      }) as typeof log.debug;
    return log;
  };
  let db = await startEmbeddedPostgres(pgDir, pgLog());
  if (opts.preload?.length) {
    // Extensions that must be loaded at start (pg_stat_statements counts statements per request).
    const admin = new Client({ connectionString: db.url });
    await admin.connect();
    await admin.query(`alter system set shared_preload_libraries = '${opts.preload.join(',')}'`);
    await admin.end();
    await db.stop();
    db = await startEmbeddedPostgres(pgDir, pgLog());
  }
  const port = await freePort();
  // Measured as it runs in production (graphql-js drops its development checks there).
  const serviceEnv = {
    NODE_ENV: 'production',
    DATA_DIR: dataDir,
    DATABASE_URL: db.url,
    LOG_LEVEL: 'warn',
    ROLES: 'api',
    // Benchmarks send far more than a principal may (docs/operations.md); the limits' own cost is
    // left out of the figures, and printed apart by the list's rate-limited targets.
    RATE_LIMIT_PER_MINUTE: '0',
    RATE_LIMIT_UPLOADS_PER_MINUTE: '0',
    RATE_LIMIT_DEPLOYMENTS_PER_MINUTE: '0',
    ...env,
  };
  const service = await startChild('src/main.js', serviceEnv, port);
  const key = await loadDevSigningKey(dataDir);
  return {
    db,
    service,
    dataDir,
    env: serviceEnv,
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
  if (!rows.length) return;
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
  return {
    gql,
    modelId: createModel.id,
    create,
    arrivals,
    eventOf,
    latencies,
    dispose: () => client.dispose(),
  };
}

/** Bytes of an upload the benchmarks' client queues before it waits for its socket to drain. */
const CLIENT_QUEUE_BYTES = 8 * MiB;

/** Streams a multipart upload of `size` bytes (a PNG signature, then filler) from one reused buffer. */
export function upload(
  url: string,
  headers: Record<string, string>,
  size: number,
  name = 'big.png',
  /** Form fields sent before the file, and the file part's name (a GraphQL multipart request). */
  form: { fields: Record<string, string>; file: string } = { fields: {}, file: 'file' },
): Promise<{ seconds: number; body: string }> {
  // As curl sends it (browsers use a similar 38-character one); busboy's search skips by its length.
  const boundary = '------------------------a1b2c3d4e5f60718';
  const fields = Object.entries(form.fields).map(
    ([field, value]) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${field}"\r\n\r\n${value}\r\n`,
  );
  const head = Buffer.from(
    `${fields.join('')}--${boundary}\r\nContent-Disposition: form-data; name="${form.file}"; filename="${name}"\r\n` +
      'Content-Type: image/png\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const block = Buffer.alloc(Math.min(MiB, Math.max(size, 8)), 7);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(block);
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const req = http.request(url, {
      method: 'POST',
      headers: {
        ...headers,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': String(head.length + size + tail.length),
      },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        if ((res.statusCode !== 200 && res.statusCode !== 201) || body.startsWith('{"errors"'))
          return reject(new Error(`upload answered ${res.statusCode}: ${body}`));
        resolve({ seconds: Number(process.hrtime.bigint() - started) / 1e9, body });
      });
    });
    let sent = 0;
    // The client refills its queue only once it has drained: waiting for 'drain' after each MiB
    // woke it once per MiB and, on a busy machine, left the server reading a half-empty socket
    // (docs/performance-history.md, Media, round 4).
    const pump = () => {
      while (sent < size) {
        const n = Math.min(block.length, size - sent);
        sent += n;
        req.write(n === block.length ? block : block.subarray(0, n));
        if (req.writableLength >= CLIENT_QUEUE_BYTES) return void req.once('drain', pump);
      }
      req.end(tail);
    };
    req.write(head);
    pump();
  });
}
