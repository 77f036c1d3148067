import { raw, sql, type Cte, type Sql } from '../db/sql';
import type { JobStatementParts } from '../jobs/job.statement-parts.port';

/** The task that makes one attempt at a webhook delivery. */
export const DELIVER_TASK = 'deliver_webhook';
/** The task that turns a job's recent log lines into one `logs` message (at most one per 500 ms). */
export const LOGS_TASK = 'webhook_logs';
export const LOGS_THROTTLE_MS = 500;

/** One graphile-worker job per delivery at a time: its next attempt, or the watch over the current one. */
export const deliveryKeySql = (id: string) => `'webhook:' || ${id}`;

/**
 * CTEs that record a message for each of `events` (a text[] SQL expression) about each job row
 * of `source`, when the job's deployment has a webhook whose filter takes the event, and enqueue
 * the first attempt of each: composed into the statement that causes the event, so an event
 * has its messages if and only if it happened, crash or not. The caller must read `<p>_go`.
 */
export function deliveryCtes(p: string, source: string, events: Sql): Cte[] {
  return [
    {
      name: `${p}_msg`,
      sql: sql`
      insert into webhook_deliveries (id, job_id, owner_type, owner_id, event, url, status, attempts, created_at)
      select 'msg_' || replace(gen_random_uuid()::text, '-', ''), s.id, s.owner_type, s.owner_id, e.event,
             d.webhook, 'pending', 0, clock_timestamp()
      from ${raw(source)} s join deployments d on d.id = s.deployment_id
      cross join lateral unnest(${events}) with ordinality as e(event, n)
      where d.webhook is not null and e.event = any(d.webhook_events_filter)
      order by e.n
      returning id`,
    },
    {
      name: `${p}_go`,
      sql: raw(`
      select graphile_worker.add_job('${DELIVER_TASK}', json_build_object('deliveryId', id, 'attempt', 1),
               job_key => ${deliveryKeySql('id')}, max_attempts => 25)
      from ${p}_msg`),
    },
  ];
}

/**
 * What webhooks add to the job lifecycle's statements (wired in server/services.ts): the
 * messages of a transition's events, and the `logs` throttle task of published lines.
 */
export const webhookJobParts: Pick<JobStatementParts, 'events' | 'lines'> = {
  events: ({ jobs, events }) => ({
    ctes: deliveryCtes('wh', jobs, sql`${`{${events.join(',')}}`}::text[]`),
    reads: [raw('(select count(*) from wh_go) as messages')],
  }),
  /**
   * Enqueues the `logs` throttle task of the job when its deployment's webhook hears `logs`: the
   * task runs 500 ms after the first new lines, and lines printed meanwhile join it
   * (graphile-worker's job key with `preserve_run_at`), so messages come at most every 500 ms.
   */
  lines: (jobId) => ({
    ctes: [
      {
        name: 'wh_logs',
        sql: sql`select graphile_worker.add_job('${raw(LOGS_TASK)}', json_build_object('jobId', j.id::text),
            run_at => now() + interval '${raw(String(LOGS_THROTTLE_MS))} milliseconds',
            job_key => '${raw(LOGS_TASK)}:' || j.id, job_key_mode => 'preserve_run_at', max_attempts => 5)
          from jobs j join deployments d on d.id = j.deployment_id
          where j.id = ${jobId} and d.webhook is not null and 'logs' = any(d.webhook_events_filter)`,
      },
    ],
    reads: [raw('(select count(*) from wh_logs)')],
  }),
};
