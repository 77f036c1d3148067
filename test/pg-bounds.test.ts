import { Client } from 'pg';
import { boundedPool } from '../src/db/pg-bounds';
import { createTestDatabase } from './helpers/db';

/**
 * The job queue's pool (src/db/pg-bounds.ts) outlives its idle connections: one the server ends
 * (a restart, an administrator) is dropped with an 'error' the pool must hear, or the process
 * would die of an unhandled error event; the next query opens a new connection.
 */
it('survives the end of an idle connection and answers the next query', async () => {
  const url = await createTestDatabase();
  const pool = boundedPool({
    connectionString: url,
    max: 2,
    timeoutMs: 5000,
    applicationName: 'bounds-test',
  });
  const admin = new Client({ connectionString: url });
  await admin.connect();
  try {
    const before = await pool.query<{ pid: number }>('select pg_backend_pid() as pid');
    await admin.query('select pg_terminate_backend($1)', [before.rows[0].pid]);
    // No listener of the test's own: the pool's must hear the error.
    for (let i = 0; i < 200 && pool.totalCount > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(pool.totalCount).toBe(0);
    const after = await pool.query<{ pid: number }>('select pg_backend_pid() as pid');
    expect(after.rows[0].pid).not.toBe(before.rows[0].pid);
  } finally {
    await admin.end();
    await pool.end();
  }
});
