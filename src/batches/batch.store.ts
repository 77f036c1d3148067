import type { MikroORM } from '@mikro-orm/postgresql';
import type { Owner } from '../common/principal';
import type { Page, PageArgs } from '../common/pagination';
import { rowReader } from '../db/rows';
import { sql, type StatementPart } from '../db/sql';
import { sqlPage } from '../db/sql-page';
import { Batch } from './batch.entity';

/** A batch's jobs by state: each item counted once, by its latest job (a retry replaces it). */
export interface BatchCounts {
  queued: number;
  starting: number;
  running: number;
  succeeded: number;
  failed: number;
  canceled: number;
}

/** What a batch's jobs say of it, read together (BatchStore.progressOf). */
export interface BatchProgress {
  counts: BatchCounts;
  /** Jobs (all attempts) not ended. */
  live: number;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** Run time of every attempt, summed. */
  runSeconds: number;
}

const NO_COUNTS: BatchCounts = { queued: 0, starting: 0, running: 0, succeeded: 0, failed: 0, canceled: 0 };

/**
 * The batches table's SQL: its row's parts in the job store's statements (creation, cancel,
 * retry), its reads, and the counts read from the jobs (a GROUP BY over `jobs_batch_status_index`:
 * no counter row that every job's transition would have to update; docs/batches.md).
 */
export class BatchStore {
  constructor(private readonly orm: MikroORM) {}

  /** The batch's row, inserted in the statement creating its items (CTE `batch_row`). */
  insertPart(b: Batch): StatementPart {
    return {
      ctes: [
        {
          name: 'batch_row',
          sql: sql`insert into batches (id, owner_type, owner_id, name, model_id, args, inputs, status, total, created_at,
                                        webhook, webhook_events_filter)
                   values (${b.id}, ${b.ownerType}, ${b.ownerId}, ${b.name}, ${b.modelId}, ${JSON.stringify(b.args)}::jsonb,
                           ${JSON.stringify(b.inputs)}::jsonb, 'running', ${b.total}, now(), ${b.webhook},
                           ${`{${b.webhookEventsFilter.join(',')}}`}::text[])
                   returning id, created_at`,
        },
      ],
    };
  }

  /**
   * The batch `id` becomes `canceled` (CTE `batch_row`, one row if it moved), its start and end
   * recorded; in the statement canceling its jobs.
   */
  cancelPart(id: string): StatementPart {
    return {
      ctes: [
        {
          name: 'batch_row',
          sql: sql`update batches set status = 'canceled', finished_at = now(),
                     started_at = (select min(started_at) from jobs where batch_id = ${id})
                   where id = ${id} and status = 'running' returning id`,
        },
      ],
      reads: [sql`(select count(*) from batch_row) as batch_moved`],
    };
  }

  /**
   * A canceled batch runs again once some of its failed jobs are retried: in the retry's
   * statement, after its new jobs (JobStore.retryBatch's CTE `r_job`).
   */
  reopenPart(id: string): StatementPart {
    return {
      ctes: [
        {
          name: 'batch_row',
          sql: sql`update batches set status = 'running', finished_at = null
                   where id = ${id} and exists (select 1 from r_job) returning id`,
        },
      ],
    };
  }

  async byId(id: string): Promise<Batch | null> {
    return this.orm.em.fork().findOne(Batch, { id });
  }

  /** The owner's batches, newest first, in one statement. */
  async page(owner: Owner, args: PageArgs): Promise<Page<Batch>> {
    return sqlPage(
      this.orm.em,
      'batches',
      [
        ['owner_type = ?', owner.type],
        ['owner_id = ?', owner.id],
      ],
      args,
      rowReader(this.orm, Batch),
    );
  }

  /** Jobs of `owner` queued now (MAX_QUEUED_JOBS), from the owner's status index. */
  async queuedOf(owner: Owner): Promise<number> {
    const [row] = await this.orm.em
      .fork()
      .execute(
        `select count(*)::int as n from jobs where owner_type = ? and owner_id = ? and status = 'queued'`,
        [owner.type, owner.id],
      );
    return row.n as number;
  }

  /**
   * The progress of a page of batches. An ended batch's is the one its completion check kept
   * (`final_progress`) while none of its jobs is unfinished (three probes of
   * `jobs_batch_status_index` per batch), so a page of ended batches reads no job rows; the
   * others' is read from their jobs.
   */
  async progressOfPage(batches: readonly Batch[]): Promise<Map<string, BatchProgress>> {
    const kept = batches.filter((b) => b.finalProgress);
    const reopened = new Set<string>();
    if (kept.length) {
      const rows: { id: string }[] = await this.orm.em.fork().execute(
        `select u.id from unnest(?::uuid[]) u(id)
         where exists (select 1 from jobs j where j.batch_id = u.id and j.status in ('queued', 'starting', 'running'))`,
        [`{${kept.map((b) => b.id).join(',')}}`],
      );
      for (const r of rows) reopened.add(r.id);
    }
    const found = await this.progressOf(
      batches.filter((b) => !b.finalProgress || reopened.has(b.id)).map((b) => b.id),
    );
    for (const b of kept) if (!reopened.has(b.id)) found.set(b.id, keptProgress(b.finalProgress!));
    return found;
  }

  /**
   * The progress of batches, in one statement whatever their number: counts by state of each
   * item's latest job (a job some later job of the batch retries is not counted), and over all
   * attempts the jobs not ended, the first start, the last end and the run time.
   */
  async progressOf(ids: readonly string[]): Promise<Map<string, BatchProgress>> {
    const found = new Map<string, BatchProgress>();
    if (!ids.length) return found;
    const rows: Record<string, unknown>[] = await this.orm.em.fork().execute(
      `select j.batch_id, j.status,
              count(*) filter (where not exists (select 1 from jobs r where r.retry_of = j.id and r.batch_id = j.batch_id))::int as latest,
              count(*)::int as jobs, min(j.started_at) as started_at, max(j.finished_at) as finished_at,
              coalesce(sum(j.run_seconds), 0)::float8 as run_seconds
       from jobs j where j.batch_id = any(?::uuid[]) group by j.batch_id, j.status`,
      [`{${ids.join(',')}}`],
    );
    for (const r of rows) {
      const id = r.batch_id as string;
      let p = found.get(id);
      if (!p)
        found.set(
          id,
          (p = { counts: { ...NO_COUNTS }, live: 0, startedAt: null, finishedAt: null, runSeconds: 0 }),
        );
      const status = r.status as keyof BatchCounts;
      p.counts[status] += r.latest as number;
      if (!['succeeded', 'failed', 'canceled'].includes(status)) p.live += r.jobs as number;
      const started = r.started_at === null ? null : new Date(r.started_at as string);
      const finished = r.finished_at === null ? null : new Date(r.finished_at as string);
      if (started && (!p.startedAt || started < p.startedAt)) p.startedAt = started;
      if (finished && (!p.finishedAt || finished > p.finishedAt)) p.finishedAt = finished;
      p.runSeconds += r.run_seconds as number;
    }
    for (const id of ids)
      if (!found.has(id))
        found.set(id, {
          counts: { ...NO_COUNTS },
          live: 0,
          startedAt: null,
          finishedAt: null,
          runSeconds: 0,
        });
    return found;
  }
}

/** A progress kept as JSON (BatchCompletion.check) as it was read. */
function keptProgress(json: Record<string, unknown>): BatchProgress {
  const p = json as unknown as BatchProgress & { startedAt: string | null; finishedAt: string | null };
  return {
    ...p,
    startedAt: p.startedAt === null ? null : new Date(p.startedAt),
    finishedAt: p.finishedAt === null ? null : new Date(p.finishedAt),
  };
}
