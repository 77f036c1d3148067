/**
 * A separate embedded PostgreSQL in its own process, for tests that stop and restart the
 * database under a running service. Prints its URL on stdout; stops cleanly on SIGTERM.
 * Usage: node -r @swc-node/register test/helpers/pg-child.ts <dataDir> <port>
 */
import { createLogger } from '../../src/common/logger';
import { startEmbeddedPostgres } from '../../src/db/embedded-postgres';

async function main() {
  const [dir, port] = process.argv.slice(2);
  const db = await startEmbeddedPostgres(dir, createLogger('warn'), Number(port));
  process.stdout.write(`${db.url}\n`);
  process.on('SIGTERM', () => {
    db.stop().then(() => process.exit(0));
  });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
