import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../common/logger';
import { DatabaseUnreachable, migrateSchema } from './orm';

export interface MigrationTarget {
  databaseUrl: string;
  /** DATABASE_QUERY_TIMEOUT_MS: bounds connecting (migration statements are not bounded). */
  queryTimeoutMs: number;
}

/** A log line of graphile-worker's (its levels), passed on to the service's logger. */
export type MigrationLog = (level: string, message: string, meta?: Record<string, unknown>) => void;

/** What the migration worker posts to the service's thread. */
export type MigrationMessage =
  | { log: { level: string; message: string; meta?: Record<string, unknown> } }
  | { done: true }
  | { failed: { name: string; message: string; stack?: string } };

/** Both schemas up to date: the service's (MikroORM's migrator) and the job queue's (graphile-worker). */
export async function migrateSchemas(target: MigrationTarget, log: MigrationLog): Promise<void> {
  await migrateSchema({ clientUrl: target.databaseUrl, entities: [], queryTimeoutMs: target.queryTimeoutMs });
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { runMigrations, Logger } = require('graphile-worker') as typeof import('graphile-worker');
  await runMigrations({ connectionString: target.databaseUrl, logger: new Logger(() => log) });
}

/**
 * Migrates in a worker thread whose heap is released when it ends: the migrator, the migrations
 * and graphile-worker are about 4 MiB of heap that a serving process would otherwise keep for its
 * whole life, and each MiB of live heap costs up to two of peak RSS with `npm start`'s flags (four
 * without: docs/performance.md, "Memory"). Run from the TypeScript sources (tests, swc), it
 * migrates in this thread, since a worker thread could not load them.
 */
export async function migrate(target: MigrationTarget, log: Logger): Promise<void> {
  const graphileLog: MigrationLog = (level, message, meta) =>
    log[level === 'error' ? 'error' : level === 'warning' ? 'warn' : 'debug'](
      { ...meta, component: 'graphile-worker' },
      message,
    );
  if (!__filename.endsWith('.js')) return migrateSchemas(target, graphileLog);
  const worker = new Worker(path.join(__dirname, 'migrate.worker.js'), { workerData: target });
  try {
    await new Promise<void>((resolve, reject) => {
      worker.on('message', (m: MigrationMessage) => {
        if ('log' in m) graphileLog(m.log.level, m.log.message, m.log.meta);
        else if ('done' in m) resolve();
        else {
          const err =
            m.failed.name === 'DatabaseUnreachable'
              ? new DatabaseUnreachable(m.failed.message)
              : Object.assign(new Error(m.failed.message), { name: m.failed.name });
          if (m.failed.stack) err.stack = m.failed.stack;
          reject(err);
        }
      });
      worker.once('error', reject);
      worker.once('exit', (code) =>
        reject(new Error(`the migration worker exited (${code}) before finishing`)),
      );
    });
  } finally {
    await worker.terminate();
  }
}
