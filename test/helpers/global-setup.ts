import { chmod, mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../../src/common/logger';
import { startEmbeddedPostgres } from '../../src/db/embedded-postgres';

/**
 * One embedded PostgreSQL per test run; each test file creates its own database on it and
 * migrates it as the service does at start. (MikroORM is not loaded here: its metadata must
 * not leak into in-band test runs that share this process.)
 */
export default async function globalSetup(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'media-test-pg-'));
  await chmod(dir, 0o755);
  const db = await startEmbeddedPostgres(dir, createLogger('warn'));
  const admin = new URL(db.url);
  admin.pathname = '/postgres';
  process.env.TEST_PG_ADMIN_URL = admin.toString();
  (globalThis as Record<string, unknown>).__testDb = { db, dir };
}
