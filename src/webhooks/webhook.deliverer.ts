import type { MikroORM } from '@mikro-orm/postgresql';
import type { Owner } from '../common/principal';
import type { Logger } from '../common/logger';
import type { AddressPolicy } from './webhook.address';
import { GIVE_UP_AFTER_MS, retryDelayMs } from './webhook.backoff';
import { WebhookDelivery } from './webhook.entity';
import { sendOnce, type AttemptOutcome } from './webhook.sender';
import type { WebhookService } from './webhook.service';
import { signature } from './webhook.signature';
import { raw, sql, withCtes } from '../db/sql';
import { DELIVER_TASK, deliveryCtes, deliveryKeySql, LOGS_TASK } from './webhook.sql';

/** The job as `GET /api/v1/jobs/{id}` shows it to its owner, or null once it is gone. */
export type JobRenderer = (owner: Owner, jobId: string) => Promise<unknown>;

export interface DelivererOptions {
  timeoutMs: number;
  policy: AddressPolicy;
}

/** After an attempt's bound, how long its watch waits before taking it for lost (its worker died). */
const WATCH_GRACE_MS = 20_000;

interface AttemptTask {
  deliveryId: string;
  attempt: number;
}

/**
 * The worker side of webhooks: graphile-worker tasks that make the attempts, one task per attempt.
 * A delivery always has exactly one pending task under its job key: the next attempt, or, while
 * an attempt is under way, a watch that becomes the next attempt should this worker die (kill -9
 * leaves a running graphile-worker task locked for hours). Every attempt is recorded; a message
 * that was delivered, or given up, has no task left, so it is never sent again.
 */
export class WebhookDeliverer {
  constructor(
    private readonly orm: MikroORM,
    private readonly webhooks: WebhookService,
    private readonly render: JobRenderer,
    private readonly recentLogTail: (jobId: string) => Promise<string | null>,
    private readonly log: Logger,
    private readonly opts: DelivererOptions,
  ) {}

  tasks(): Record<string, (payload: unknown) => Promise<void>> {
    return {
      [DELIVER_TASK]: (p) => this.attempt(p as AttemptTask),
      [LOGS_TASK]: (p) => this.logs((p as { jobId: string }).jobId),
    };
  }

  /** The `logs` throttle task: one message about a running job's latest lines (an ended job's `completed` message has them). */
  private async logs(jobId: string): Promise<void> {
    // FOR SHARE waits for a transition under way and re-reads the status after it, so a `logs`
    // message is never recorded after the job's `completed` one.
    const statement = withCtes(
      [
        {
          name: 'src',
          sql: sql`select * from jobs where id = ${jobId} and status in ('queued', 'starting', 'running') for share`,
        },
        ...deliveryCtes('l', 'src', raw(`'{logs}'::text[]`)),
      ],
      raw('select count(*) from l_go'),
    ).compile();
    await this.orm.em.fork().execute(statement.text, statement.params);
  }

  /** One attempt at a message: its task runs when the delivery has made exactly `attempt - 1` attempts. */
  private async attempt({ deliveryId, attempt }: AttemptTask): Promise<void> {
    const em = this.orm.em.fork();
    const found = await em.findOne(WebhookDelivery, { id: deliveryId });
    // Delivered, given up, or an attempt another task has made: nothing to do.
    if (!found || found.status !== 'pending' || found.attempts !== attempt - 1) return;
    const owner = { type: found.ownerType, id: found.ownerId };
    let body = found.body;
    if (body === null) {
      // Only a job's messages are rendered when sent; a batch's is written with its body.
      if (!found.job) return this.record(found, attempt, new Date(), gone());
      const job = (await this.render(owner, found.job.id)) as Record<string, unknown> | null;
      if (job === null) return this.record(found, attempt, new Date(), gone());
      // The stored tail is saved every 5 s while a job runs; a `logs` message has the latest lines.
      if (found.event === 'logs') job.log_tail = (await this.recentLogTail(found.job.id)) ?? job.log_tail;
      body = JSON.stringify(job);
    }
    if (body === null) return this.record(found, attempt, new Date(), gone());
    // Counts the attempt, records a previous one whose worker died as interrupted, and arms the
    // watch over this one, in one statement.
    const [started]: Record<string, unknown>[] = await em.execute(
      `with prev as (select id, attempts, attempt_started_at from webhook_deliveries
                     where id = ? and status = 'pending' and attempts = ? for update),
       lost as (insert into webhook_attempts (delivery_id, attempt, started_at, outcome, error)
                select id, attempts, attempt_started_at, 'interrupted', 'the worker stopped during this attempt (crash or restart)'
                from prev where attempts > 0 on conflict (delivery_id, attempt) do nothing),
       upd as (update webhook_deliveries w set attempts = prev.attempts + 1, attempt_started_at = now(),
                      next_attempt_at = null, body = coalesce(w.body, ?)
               from prev where w.id = prev.id returning w.*),
       watch as (select graphile_worker.add_job(?, json_build_object('deliveryId', id, 'attempt', attempts + 1),
                   run_at => now() + make_interval(secs => ?), job_key => ${deliveryKeySql('id')}, max_attempts => 25)
                 from upd)
       select upd.*, (select count(*) from watch) as watched from upd`,
      [deliveryId, attempt - 1, body, DELIVER_TASK, (this.opts.timeoutMs + WATCH_GRACE_MS) / 1000],
    );
    if (!started) return;
    const delivery = em.map(WebhookDelivery, started);
    const sentBody = delivery.body!;
    const timestamp = Math.floor(Date.now() / 1000);
    const secrets = await this.webhooks.signingSecrets(owner);
    const outcome = await sendOnce(
      delivery.url,
      {
        'content-type': 'application/json',
        'user-agent': 'media-platform-webhooks/1',
        'webhook-id': delivery.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signature(secrets, delivery.id, timestamp, sentBody),
      },
      sentBody,
      this.opts,
    );
    await this.record(delivery, attempt, delivery.attemptStartedAt ?? new Date(), outcome);
  }

  /**
   * Records an attempt and what follows in one statement: delivered or failed for good (the
   * delivery's task is removed), or the next attempt after the backoff (it replaces the watch).
   */
  private async record(delivery: WebhookDelivery, attempt: number, startedAt: Date, outcome: AttemptOutcome) {
    let kind = outcome.kind;
    let error = outcome.error;
    let nextAt: Date | null = null;
    if (kind === 'retry') {
      if (Date.now() - delivery.createdAt.getTime() >= GIVE_UP_AFTER_MS) {
        kind = 'failed';
        error = `${error}; given up after ${attempt} attempts over 24 hours`;
      } else nextAt = new Date(Date.now() + retryDelayMs(attempt, outcome.retryAfterMs));
    }
    const status = kind === 'retry' ? 'pending' : kind;
    await this.orm.em.fork().execute(
      `with a as (insert into webhook_attempts (delivery_id, attempt, started_at, duration_ms, response_code, outcome, error, response)
                  values (?, ?, ?, ?, ?, ?, ?, ?) on conflict (delivery_id, attempt) do nothing),
       upd as (update webhook_deliveries set status = ?, next_attempt_at = ?::timestamptz,
                      delivered_at = case when ? = 'delivered' then now() end
               where id = ? and status = 'pending' returning id),
       again as (select graphile_worker.add_job(?, json_build_object('deliveryId', id, 'attempt', ?::int + 1),
                   run_at => ?::timestamptz, job_key => ${deliveryKeySql('id')}, max_attempts => 25)
                 from upd where ?::timestamptz is not null),
       done as (select graphile_worker.remove_job(${deliveryKeySql('id')}) from upd where ?::timestamptz is null)
       select (select count(*) from again) + (select count(*) from done) as tasks`,
      [
        delivery.id,
        attempt,
        startedAt,
        outcome.durationMs,
        outcome.responseCode,
        kind,
        error,
        outcome.responseExcerpt,
        status,
        nextAt,
        status,
        delivery.id,
        DELIVER_TASK,
        attempt,
        nextAt,
        nextAt,
        nextAt,
      ],
    );
    if (kind !== 'delivered')
      this.log.info(
        { delivery: delivery.id, attempt, outcome: kind, error, nextAt },
        'webhook attempt failed',
      );
  }
}

/** The outcome of a message whose job no longer exists. */
function gone(): AttemptOutcome {
  return {
    kind: 'failed',
    responseCode: null,
    durationMs: 0,
    error: 'the job no longer exists',
    retryAfterMs: null,
    responseExcerpt: null,
  };
}
