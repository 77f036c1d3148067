/**
 * Generates a migration from the difference between the entities and the schema the
 * checked-in migrations build, then rewrites migrations/index.ts. Runs on a throwaway
 * embedded PostgreSQL, so it needs nothing installed.
 */
import 'reflect-metadata';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { MikroORM } from '@mikro-orm/postgresql';
import { createLogger } from '../src/common/logger';
import { startEmbeddedPostgres } from '../src/db/embedded-postgres';
import { ormConfig } from '../src/db/orm';
import { entities } from '../src/server/entities';
import { writeMigrationIndex } from './migration-index';

async function main() {
  const repoRoot = path.resolve(__dirname, '..', '..');
  const migrationsDir = path.join(repoRoot, 'migrations');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'migration-create-'));
  await chmod(dir, 0o755);
  const db = await startEmbeddedPostgres(dir, createLogger('warn'));
  try {
    const config = ormConfig({ clientUrl: db.url, entities, migrations: true });
    const orm = await MikroORM.init({
      ...config,
      migrations: {
        ...config.migrations,
        path: migrationsDir,
        emit: 'ts',
        fileName: (ts, name) => `Migration${ts}${name ? '_' + name : ''}`,
      },
    });
    await orm.migrator.up();
    const result = await orm.migrator.createMigration(migrationsDir, false, false, process.argv[2]);
    console.log(
      result.diff.up.length ? `created ${result.fileName}` : 'schema is up to date, no migration created',
    );
    await orm.close();
  } finally {
    await db.stop();
    await rm(dir, { recursive: true, force: true });
  }
  await writeMigrationIndex(migrationsDir);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
