import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/** A fresh, empty database for one test file; the service migrates it when it starts. */
export async function createTestDatabase(): Promise<string> {
  const adminUrl = process.env.TEST_PG_ADMIN_URL;
  if (!adminUrl) throw new Error('TEST_PG_ADMIN_URL is not set: run the tests through jest (globalSetup)');
  const name = `test_${randomBytes(6).toString('hex')}`;
  const client = new Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
