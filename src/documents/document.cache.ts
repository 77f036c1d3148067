import type { MikroORM } from '@mikro-orm/postgresql';

/** Documents kept in each process's memory (the most recently used). */
const MEMORY_ENTRIES = 1000;
/** Documents kept in the database; beyond that, the least recently used go. */
export const MAX_DOCUMENTS = 10_000;
/** A document's use is recorded at most this often (reads stay reads). */
const TOUCH_MS = 24 * 3600_000;

/**
 * Apollo's persisted-query cache, in PostgreSQL behind a small in-process LRU: every process
 * of the service shares the registered documents, so a browser that registered one through any
 * process sends only its hash afterwards. Entries never expire by time (a hash names its
 * document forever); the table is bounded by MAX_DOCUMENTS, least recently used out first.
 */
export class PgDocumentCache {
  private readonly memory = new Map<string, { document: string; touched: number }>();
  private writes = 0;

  constructor(private readonly orm: MikroORM) {}

  async get(key: string): Promise<string | undefined> {
    const hit = this.memory.get(key);
    if (hit) {
      this.remember(key, hit.document, hit.touched);
      if (Date.now() - hit.touched > TOUCH_MS) void this.touch(key);
      return hit.document;
    }
    const [row]: { document: string }[] = await this.orm.em
      .fork()
      .execute(`update graphql_documents set used_at = now() where key = ? returning document`, [key]);
    if (row) this.remember(key, row.document, Date.now());
    return row?.document;
  }

  async set(key: string, document: string): Promise<void> {
    this.remember(key, document, Date.now());
    await this.orm.em.fork().execute(
      `insert into graphql_documents (key, document, used_at) values (?, ?, now())
         on conflict (key) do update set used_at = now()`,
      [key, document],
    );
    // Now and then (not on every write), the least recently used beyond the bound go.
    if (++this.writes % 100 === 1)
      await this.orm.em.fork().execute(
        `delete from graphql_documents where key in
             (select key from graphql_documents order by used_at desc offset ?)`,
        [MAX_DOCUMENTS],
      );
  }

  async delete(key: string): Promise<boolean> {
    this.memory.delete(key);
    await this.orm.em.fork().execute('delete from graphql_documents where key = ?', [key]);
    return true;
  }

  private remember(key: string, document: string, touched: number): void {
    this.memory.delete(key); // re-inserted last: the Map's order is the recency order
    this.memory.set(key, { document, touched });
    if (this.memory.size > MEMORY_ENTRIES) this.memory.delete(this.memory.keys().next().value!);
  }

  private async touch(key: string): Promise<void> {
    const hit = this.memory.get(key);
    if (hit) hit.touched = Date.now();
    await this.orm.em
      .fork()
      .execute('update graphql_documents set used_at = now() where key = ?', [key])
      .catch(() => undefined);
  }
}
