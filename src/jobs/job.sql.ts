import { raw, sql, type Cte, type Sql } from '../db/sql';
import { CHANNELS } from '../events/event-bus';
import { BATCH_PRIORITY, DEADLINE_TASK, DISPATCH_TASK } from './job.queue';

// The fragments the job store composes its statements of. Private to the store (job.store.ts,
// job.creation.ts): no other module writes jobs' SQL; what others add comes as statement parts
// (job.statement-parts.port.ts).

/** What fixes what a job runs: copied as they are into a retry. */
const COPIED =
  'deployment_id, batch_id, batch_item, model_id, model_version_id, secrets, owner_type, owner_id, executor, argv, inputs, container, machine_type, ' +
  'machine_count, priority_rank, timeout_seconds, max_retries';

/**
 * Enqueues a job's deadline task, for a job row `j` (nothing when it has no deadline). Composed
 * into the statements that create jobs, so a job has its deadline if and only if it exists.
 */
export const deadlineTaskSql = (j: string): Sql =>
  raw(`case when ${j}.deadline_at is not null then (select 1 from graphile_worker.add_job('${DEADLINE_TASK}',
     json_build_object('jobId', ${j}.id::text), run_at => ${j}.deadline_at, max_attempts => 25)) end`);

/**
 * CTEs that queue a copy of each job row of `source` (which adds `new_id`, null for a random one,
 * `new_attempt` and `new_deadline`), linked to it by `retry_of`: the job, its first transition,
 * its dispatch task, its deadline task and its `queued` event, all in the caller's statement.
 * Named `<p>_job` (the new rows), `<p>_seq`, `<p>_tr` and `<p>_go`; the caller must read `<p>_go`, or
 * PostgreSQL never runs it.
 */
export function queuedCopyCtes(p: string, source: string): Cte[] {
  return [
    {
      name: `${p}_job`,
      sql: raw(`
      insert into jobs (id, ${COPIED}, status, attempt, retry_of, deadline_at, log_tail, created_at, updated_at)
      select coalesce(new_id, gen_random_uuid()), ${COPIED}, 'queued', new_attempt, id, new_deadline, '', now(), now()
      from ${source}
      returning *`),
    },
    // Each copy with its transition's id, taken first: no join of two CTEs (see transitionCtes).
    {
      name: `${p}_seq`,
      sql: raw(`select nextval('job_transitions_id_seq') as seq, ${p}_job.* from ${p}_job`),
    },
    {
      name: `${p}_tr`,
      sql: raw(`
      insert into job_transitions (id, job_id, from_status, to_status, at)
      select seq, id, null, 'queued', created_at from ${p}_seq returning id`),
    },
    {
      name: `${p}_go`,
      sql: sql`
      select graphile_worker.add_job('${raw(DISPATCH_TASK)}', json_build_object('jobId', j.id::text), max_attempts => 5,
          priority => case when j.batch_id is null then 0 else ${raw(String(BATCH_PRIORITY))} end),
        ${deadlineTaskSql('j')},
        pg_notify('${raw(CHANNELS.jobs)}', ${jobEventSql('j', 'j.seq', 'null::text')})
      from ${raw(`${p}_seq`)} j`,
    },
  ];
}

/**
 * The JSON text of a job event for the row `j` (after its change), its transition's id `seq`,
 * previous state `from` and state `status` (the row's own unless given). Subscribers answer from
 * it without reading the job when the fields they asked for are in it; so that NOTIFY's
 * 8000-byte limit holds, the columns of unbounded size are put in only below a size (the log
 * tail never): at most about 6.7 KB in all.
 */
export function jobEventSql(j: string, seq: string, from: string, status = `${j}.status`): Sql {
  const ifSmall = (key: string, column: string, bytes: number) =>
    `case when coalesce(octet_length(${column}::text), 0) <= ${bytes} then jsonb_build_object('${key}', ${column}) else '{}' end`;
  return raw(`json_build_object('jobId', ${j}.id, 'ownerType', ${j}.owner_type, 'ownerId', ${j}.owner_id,
    'status', ${status}, 'from', ${from}, 'at', ${j}.updated_at, 'seq', ${seq}, 'job',
    jsonb_build_object('id', ${j}.id, 'deploymentId', ${j}.deployment_id, 'modelId', ${j}.model_id,
      'batch', ${j}.batch_id,
      'ownerType', ${j}.owner_type, 'ownerId', ${j}.owner_id, 'status', ${status},
      'executor', ${j}.executor, 'externalId', ${j}.external_id, 'machineType', ${j}.machine_type,
      'machineCount', ${j}.machine_count, 'priorityRank', ${j}.priority_rank, 'timeoutSeconds', ${j}.timeout_seconds,
      'exitCode', ${j}.exit_code, 'queueSeconds', ${j}.queue_seconds, 'runSeconds', ${j}.run_seconds,
      'createdAt', ${j}.created_at, 'startedAt', ${j}.started_at, 'finishedAt', ${j}.finished_at,
      'updatedAt', ${j}.updated_at)
    || ${ifSmall('container', `${j}.container`, 256)} || ${ifSmall('error', `${j}.error`, 1024)}
    || ${ifSmall('argv', `${j}.argv`, 1280)} || ${ifSmall('output', `${j}.output`, 3072)}
    || ${ifSmall('nodes', `${j}.nodes`, 256)})::text`);
}
