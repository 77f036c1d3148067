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
export function enqueueDeliveriesSql(p: string, source: string, events: string): string {
  return `${p}_msg as (
      insert into webhook_deliveries (id, job_id, owner_type, owner_id, event, url, status, attempts, created_at)
      select 'msg_' || replace(gen_random_uuid()::text, '-', ''), s.id, s.owner_type, s.owner_id, e.event,
             d.webhook, 'pending', 0, clock_timestamp()
      from ${source} s join deployments d on d.id = s.deployment_id
      cross join lateral unnest(${events}) with ordinality as e(event, n)
      where d.webhook is not null and e.event = any(d.webhook_events_filter)
      order by e.n
      returning id),
    ${p}_go as (
      select graphile_worker.add_job('${DELIVER_TASK}', json_build_object('deliveryId', id, 'attempt', 1),
               job_key => ${deliveryKeySql('id')}, max_attempts => 25)
      from ${p}_msg)`;
}

/**
 * SQL enqueueing the `logs` throttle task of the job `jobParam` when its deployment's webhook
 * hears `logs`: the task runs 500 ms after the first new lines, and lines printed meanwhile join
 * it (graphile-worker's job key with `preserve_run_at`), so messages come at most every 500 ms.
 */
export function enqueueLogsSql(jobParam: string): string {
  return `select graphile_worker.add_job('${LOGS_TASK}', json_build_object('jobId', j.id::text),
            run_at => now() + interval '${LOGS_THROTTLE_MS} milliseconds',
            job_key => '${LOGS_TASK}:' || j.id, job_key_mode => 'preserve_run_at', max_attempts => 5)
          from jobs j join deployments d on d.id = j.deployment_id
          where j.id = ${jobParam} and d.webhook is not null and 'logs' = any(d.webhook_events_filter)`;
}
