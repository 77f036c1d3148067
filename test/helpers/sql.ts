import { Client } from 'pg';

/** The SQL of a statement as the ORM's query log prints it (`[query] ... [took n ms]`). */
export function loggedSql(line: string): string {
  return line.replace(/^\[query\]\s*/, '').replace(/\s*\[took [^\]]*\]\s*$/, '');
}

/** PostgreSQL's generic plan (parameters left open) for a logged statement, as text. */
export async function planOf(databaseUrl: string, line: string, settings: string[] = []): Promise<string> {
  const pg = new Client({ connectionString: databaseUrl });
  await pg.connect();
  try {
    for (const s of settings) await pg.query(s);
    const plan = await pg.query(`explain (generic_plan) ${loggedSql(line)}`);
    return plan.rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n');
  } finally {
    await pg.end();
  }
}
