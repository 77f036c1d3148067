// The migration worker thread (src/db/migrate.ts): migrates, says how it went, and ends.
import 'reflect-metadata';
import { parentPort, workerData } from 'node:worker_threads';
import { migrateSchemas, type MigrationMessage, type MigrationTarget } from './migrate';

const post = (m: MigrationMessage) => parentPort!.postMessage(m);

/** Log metadata may hold what cannot cross threads (errors, functions): it crosses as JSON. */
function plain(meta: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  try {
    return meta && (JSON.parse(JSON.stringify(meta)) as Record<string, unknown>);
  } catch {
    return undefined;
  }
}

migrateSchemas(workerData as MigrationTarget, (level, message, meta) =>
  post({ log: { level, message, meta: plain(meta) } }),
).then(
  () => post({ done: true }),
  (err: unknown) => {
    const e = err instanceof Error ? err : new Error(String(err));
    post({ failed: { name: e.name, message: e.message, stack: e.stack } });
  },
);
