/**
 * `npm run migrate -- up | down | status`: the schema migrations (MikroORM's migrator) for
 * operators. The service applies pending migrations itself at every start; this runs them on
 * their own: before a deployment (`up`), to inspect (`status`), or to undo the latest (`down`).
 * Uses DATABASE_URL, else the running embedded PostgreSQL, else starts the embedded one briefly.
 */
import 'reflect-metadata';
import { loadConfigOrExit } from '../src/config';
import { createLogger } from '../src/common/logger';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../src/db/embedded-postgres';
import { DatabaseUnreachable, openOrm } from '../src/db/orm';
import { runningEmbeddedUrl } from './database-url';

const USAGE = 'usage: npm run migrate -- up | down | status';

async function main(): Promise<number> {
  const command = process.argv[2];
  if (!['up', 'down', 'status'].includes(command ?? '')) {
    console.error(USAGE);
    return 2;
  }
  const config = loadConfigOrExit();
  let embedded: EmbeddedDatabase | undefined;
  let url = config.databaseUrl ?? (await runningEmbeddedUrl(config.dataDir));
  if (!url) {
    embedded = await startEmbeddedPostgres(config.dataDir, createLogger('warn'));
    url = embedded.url;
  }
  try {
    const orm = await openOrm({ clientUrl: url, entities: [], migrate: false, migrations: true });
    try {
      const migrator = orm.migrator;
      if (command === 'up') {
        const applied = await migrator.up();
        console.log(applied.length ? applied.map((m) => `applied ${m.name}`).join('\n') : 'nothing to apply');
      } else if (command === 'down') {
        const reverted = await migrator.down();
        console.log(
          reverted.length ? reverted.map((m) => `reverted ${m.name}`).join('\n') : 'nothing to revert',
        );
      } else {
        const executed = await migrator.getExecutedMigrations();
        const pending = await migrator.getPendingMigrations();
        for (const m of executed) console.log(`applied  ${m.name}  ${m.executed_at.toISOString()}`);
        for (const m of pending) console.log(`pending  ${m.name}`);
        console.log(`${executed.length} applied, ${pending.length} pending`);
      }
    } finally {
      await orm.close(true);
    }
  } catch (err) {
    if (err instanceof DatabaseUnreachable) {
      console.error(err.message);
      return 2;
    }
    throw err;
  } finally {
    await embedded?.stop();
  }
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
