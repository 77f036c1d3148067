/**
 * `npm run database-url`: the database of this install, for a second process to join it
 * (`DATABASE_URL=$(npm run --silent database-url) ROLES=worker npm start`): DATABASE_URL when
 * set, otherwise the URL the running embedded PostgreSQL wrote under DATA_DIR.
 */
import { readFile } from 'node:fs/promises';
import { Client } from 'pg';
import { loadConfigOrExit } from '../src/config';
import { databaseUrlFile } from '../src/db/embedded-postgres';

function fail(message: string): never {
  console.error(message);
  process.exit(1);
}

/** The running embedded server's URL under `dataDir`, or null when none answers. */
export async function runningEmbeddedUrl(dataDir: string): Promise<string | null> {
  const url = (await readFile(databaseUrlFile(dataDir), 'utf8').catch(() => '')).trim();
  if (!url) return null;
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return url;
  } catch {
    return null; // left behind by a server that was killed
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function main() {
  const config = loadConfigOrExit();
  const url = config.databaseUrl ?? (await runningEmbeddedUrl(config.dataDir));
  if (!url)
    fail(
      `The embedded PostgreSQL of ${config.dataDir} is not running. Start the service (npm start) ` +
        'with this DATA_DIR first; it writes its database URL there while it runs.',
    );
  process.stdout.write(`${url}\n`);
}

if (require.main === module)
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
