import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../common/logger';
import type { JobEvents } from '../jobs/job.events';
import { isTerminal } from '../jobs/job.states';
import { DELIVER_TASK, deliveryKeySql } from '../webhooks/webhook.sql';
import { viewOf, type BatchService, type BatchView } from './batch.service';
import type { BatchStore } from './batch.store';

/** How long the ends of a batch's jobs are gathered before its end is checked (one check per burst). */
const CHECK_AFTER_MS = 200;

/** The body of a batch's `completed` message (docs/batches.md, "Webhook"). */
export function batchSummary(v: BatchView) {
  return {
    id: v.batch.id,
    name: v.batch.name,
    status: v.status,
    total: v.batch.total,
    counts: v.counts,
    created_at: v.batch.createdAt,
    started_at: v.startedAt,
    finished_at: v.finishedAt,
    run_seconds: v.runSeconds,
  };
}

/**
 * A batch's `completed` webhook message, written once (worker role). Every worker hears every
 * job's end (JobEvents, one listener per process); at the end of a job of a batch it checks,
 * after the transition has committed, whether the batch has no job left that has not ended, and
 * if so marks the batch (`completion_sent_at`) and writes its message with its first delivery
 * task in the same statement, guarded by the mark: of two workers (or two checks of one) only one
 * statement finds it unset, so the message is written once; its attempts and retries are those of
 * every webhook message (WebhookDeliverer, signed the same way). A worker dying before its check
 * is covered by the others, which heard the same event.
 */
export class BatchCompletion {
  private readonly due = new Map<string, NodeJS.Timeout>();
  private stopListening: (() => void) | null = null;

  constructor(
    private readonly orm: MikroORM,
    private readonly events: JobEvents,
    private readonly batches: BatchService,
    private readonly store: BatchStore,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    this.stopListening = await this.events.onTransition('every', (e) => {
      const batchId = e.job?.batch as string | null | undefined;
      // A transition read back after a gap carries no job: its batch is found by the check itself.
      if (!isTerminal(e.status) || batchId === null) return;
      if (batchId === undefined)
        void this.checkJob(e.jobId).catch((err) =>
          this.log.warn({ err, jobId: e.jobId }, 'cannot find the batch of an ended job'),
        );
      else this.schedule(batchId);
    });
  }

  stop(): void {
    this.stopListening?.();
    for (const t of this.due.values()) clearTimeout(t);
    this.due.clear();
  }

  private schedule(batchId: string): void {
    if (this.due.has(batchId)) return;
    this.due.set(
      batchId,
      setTimeout(() => {
        this.due.delete(batchId);
        void this.check(batchId).catch((err) =>
          this.log.warn({ err, batchId }, 'cannot check whether a batch has ended'),
        );
      }, CHECK_AFTER_MS),
    );
  }

  private async checkJob(jobId: string): Promise<void> {
    const [row] = await this.orm.em.fork().execute('select batch_id from jobs where id = ?', [jobId]);
    if (row?.batch_id) this.schedule(row.batch_id as string);
  }

  /**
   * When every job of the batch has ended: keeps its progress for lists (`final_progress`, each
   * time: a retry that ended since changes it) and, the first time, writes its message. Answers
   * whether this call wrote it (or marked it, when the batch has no webhook for `completed`).
   */
  async check(batchId: string): Promise<boolean> {
    const batch = await this.store.byId(batchId);
    if (!batch) return false;
    const progress = await this.batches.counts(batchId);
    const view = viewOf(batch, progress);
    if (view.status === 'running') return false;
    // `first` locks the row: of two checks at once, the second sees the first's mark.
    const [row] = await this.orm.em.fork().execute(
      `with first as (select completion_sent_at is null as first from batches where id = ? for update),
       b as (update batches set completion_sent_at = coalesce(completion_sent_at, now()), final_progress = ?::jsonb
             where id = ?
               and not exists (select 1 from jobs where batch_id = ? and status in ('queued', 'starting', 'running'))
             returning *),
       marked as (select b.* from b where (select first from first)),
       msg as (insert into webhook_deliveries (id, job_id, batch_id, owner_type, owner_id, event, url, status, attempts,
                                               body, created_at)
               select 'msg_' || replace(gen_random_uuid()::text, '-', ''), null, m.id, m.owner_type, m.owner_id,
                      'completed', m.webhook, 'pending', 0, ?, clock_timestamp()
               from marked m where m.webhook is not null and 'completed' = any(m.webhook_events_filter)
               returning id),
       go as (select graphile_worker.add_job(?, json_build_object('deliveryId', id, 'attempt', 1),
                       job_key => ${deliveryKeySql('id')}, max_attempts => 25) from msg)
       select (select count(*) from marked)::int as marked, (select count(*) from go)::int as messages`,
      [batchId, JSON.stringify(progress), batchId, batchId, JSON.stringify(batchSummary(view)), DELIVER_TASK],
    );
    if (row.marked) this.log.info({ batchId, messages: row.messages, status: view.status }, 'batch ended');
    return row.marked > 0;
  }
}
