import { raw, sql, type Cte, type Sql } from '../db/sql';
import { CHANNELS } from '../events/event-bus';
import { DISPATCH_TASK } from './job.queue';

// The dispatch's SQL (docs/governance.md): which queued job a free slot takes, across owners by
// fair share and within an owner by priority then age, under the owners' quotas; the per-owner
// counters (`owner_usage`) the claiming and ending statements keep; and what a queued job shows
// (its position, why it waits). Private to the job store, like job.sql.ts.

/** The configured defaults the statements weigh (GovernanceConfig). */
export interface DispatchSettings {
  /** FAIR_SHARE_HALF_LIFE_HOURS, in seconds. */
  halfLifeSeconds: number;
  /** QUOTA_MAX_RUNNING_JOBS; null: unlimited. */
  maxRunningJobs: number | null;
  /** QUOTA_MAX_MACHINES. */
  maxMachines: Readonly<Record<string, number>>;
}

/** A queued job's order in its owner's queue (jobs_owner_queue_index, jobs_dispatch_index). */
const QUEUE_ORDER = 'priority_rank desc, created_at, id';

/** Groups looked at per claim, best first: past them a claim under contention takes nothing. */
const CANDIDATE_GROUPS = 64;

/**
 * The limits of the owner (`ot`, `oid`) for the machine type `mt` (SQL expressions): the
 * operator's row where it says, else the configured default; a null limit is none.
 */
function limits(s: DispatchSettings, ot: string, oid: string, mt: string): { jobs: Sql; machines: Sql } {
  const quota = `(select %s from owner_quotas q where q.owner_type = ${ot} and q.owner_id = ${oid})`;
  return {
    jobs: sql`coalesce(${raw(quota.replace('%s', 'q.max_running_jobs'))}, ${s.maxRunningJobs}::int)`,
    // A type the operator named (even with null: unlimited) overrides the default.
    machines: sql`coalesce(${raw(quota.replace('%s', `case when q.machines -> ${mt} is not null then coalesce((q.machines ->> ${mt})::int, -1) end`))}, (${JSON.stringify(s.maxMachines)}::jsonb ->> ${raw(mt)})::int)`,
  };
}

/**
 * Whether `n` more jobs of `mc` machines (in all) of type `mt` fit the owner's quotas, given
 * `running` jobs and `inUse` machines of that type (-1 from `limits` stands for an explicit
 * "unlimited").
 */
function fits(
  s: DispatchSettings,
  ot: string,
  oid: string,
  mt: string,
  mc: string,
  running: string,
  inUse: string,
  n: string,
): Sql {
  const l = limits(s, ot, oid, mt);
  return sql`(${l.jobs} is null or ${raw(running)} + ${raw(n)} <= ${l.jobs})
    and (${l.machines} is null or ${l.machines} < 0 or ${raw(inUse)} + ${raw(mc)} <= ${l.machines})`;
}

/**
 * A CTE that counts the jobs of the one-row `source` (owner_type, owner_id, machine_type,
 * machine_count: their machines in all, and `jobs`: how many, if not one) as running for their
 * owner if its quotas allow them all, creating the owner's row. It returns a row if and only if
 * they may be claimed. The conflict branch decides on the row's latest version under its lock,
 * so two claims of one owner never both pass its last slot.
 */
export function takeSlotCte(
  name: string,
  source: string,
  s: DispatchSettings,
  when: Sql = raw('true'),
  jobs = '1',
): Cte {
  const mt = `(select key from jsonb_each(excluded.running_machines))`;
  const mc = `(select value::int from jsonb_each_text(excluded.running_machines))`;
  return {
    name,
    sql: sql`
      insert into owner_usage as u (owner_type, owner_id, running_jobs, running_machines, running_started_sum)
      select s.owner_type, s.owner_id, ${raw(jobs)}, jsonb_build_object(s.machine_type, s.machine_count),
             s.machine_count * extract(epoch from now())
      from ${raw(source)} s
      where ${when} and ${fits(s, 's.owner_type', 's.owner_id', 's.machine_type', 's.machine_count', '0', '0', jobs)}
      on conflict (owner_type, owner_id) do update set
        running_jobs = u.running_jobs + excluded.running_jobs,
        running_machines = u.running_machines || jsonb_build_object(${raw(mt)},
          coalesce((u.running_machines ->> ${raw(mt)})::int, 0) + ${raw(mc)}),
        running_started_sum = u.running_started_sum + excluded.running_started_sum
      where ${fits(s, 'u.owner_type', 'u.owner_id', mt, mc, 'u.running_jobs', `coalesce((u.running_machines ->> ${mt})::int, 0)`, 'excluded.running_jobs')}
      returning u.owner_type`,
  };
}

/**
 * A CTE over the rows `upd` of jobs that just ended (with `from_status`; any number, of any
 * owners): those that were claimed leave their owners' counters, and their machine-seconds since
 * the claim join the usage, the usage decayed to now first. Summed per owner (and per machine
 * type within it) first: an UPDATE ... FROM applies one row per target row.
 */
export const usageEndCte = (name: string, upd: string, s: DispatchSettings): Cte => ({
  name,
  sql: sql`
    update owner_usage u set
      running_jobs = greatest(u.running_jobs - e.jobs, 0),
      running_machines = u.running_machines || (select jsonb_object_agg(t.key,
        greatest(coalesce((u.running_machines ->> t.key)::int, 0) - t.value::int, 0)) from jsonb_each_text(e.machines) t),
      running_started_sum = u.running_started_sum - e.started_sum,
      usage = u.usage * power(0.5, extract(epoch from now() - u.decayed_at) / ${s.halfLifeSeconds}) + e.used,
      decayed_at = now()
    from (
      select owner_type, owner_id, sum(jobs) as jobs, jsonb_object_agg(machine_type, machines) as machines,
             sum(started_sum) as started_sum, sum(used) as used
      from (
        select owner_type, owner_id, machine_type, count(*) as jobs, sum(machine_count) as machines,
               sum(machine_count * extract(epoch from claimed_at)) as started_sum,
               sum(machine_count * greatest(extract(epoch from now() - claimed_at), 0)) as used
        from ${raw(upd)} where from_status in ('starting', 'running') and claimed_at is not null
        group by 1, 2, 3) by_type
      group by 1, 2) e
    where u.owner_type = e.owner_type and u.owner_id = e.owner_id
    returning 1`,
});

/**
 * An expression that enqueues one dispatch task when a job of `upd` left a slot and jobs wait (at
 * most `max` for the statement): a task whose claim found every waiting job over its quota
 * ended, and this one takes over.
 */
export const wakeSql = (upd: string, max?: number): Sql =>
  raw(`(select count(graphile_worker.add_job('${DISPATCH_TASK}', '{}'::json, max_attempts => 5))
        from (select 1 from ${upd} e where e.from_status in ('starting', 'running')
              and exists (select 1 from jobs w where w.status = 'queued')${max === undefined ? '' : ` limit ${max}`}) e) as woken`);

/**
 * The claim: a free slot of the worker `workerId` takes the best queued job, in one statement.
 *
 * 1. `g` walks jobs_dispatch_index one step per (owner, machine type) group (a skip scan: a few
 *    index probes per group however many jobs wait), with each group's first job.
 * 2. `c` weighs each group's owner: its usage decayed to now plus its running jobs' machine-seconds
 *    so far, over its shares (the owner with the least goes first, as Slurm's fair-share factor),
 *    then fewer machines running, then the group's first job by priority and age; groups over
 *    a quota are left out.
 * 3. `pick` locks the first job of the best group that another claim has not locked (SKIP
 *    LOCKED: two workers never take the same job, and neither waits for the other).
 * 4. `take` counts it against its owner's quotas (decided under the owner row's lock); only then
 *    does `upd` move it to `starting` for this worker.
 *
 * Answers the job's row, or a row with `picked` only: 1 when a job was picked but its owner's
 * quota was taken meanwhile (the caller claims again), 0 when no job may start now.
 */
export function claimSql(workerId: string, s: DispatchSettings, jobColumns: string, eventSql: Sql): Sql {
  const l = limits(s, 'g.owner_type', 'g.owner_id', 'g.machine_type');
  return sql`
  with recursive g as (
    (select owner_type, owner_id, machine_type, priority_rank, created_at, machine_count from jobs
     where status = 'queued' order by owner_type, owner_id, machine_type, ${raw(QUEUE_ORDER)} limit 1)
    union all
    select n.* from g cross join lateral (
      select j.owner_type, j.owner_id, j.machine_type, j.priority_rank, j.created_at, j.machine_count from jobs j
      where j.status = 'queued' and (j.owner_type, j.owner_id, j.machine_type) > (g.owner_type, g.owner_id, g.machine_type)
      order by j.owner_type, j.owner_id, j.machine_type, j.priority_rank desc, j.created_at, j.id limit 1) n
  ),
  c as (
    select g.*, coalesce(u.running_jobs, 0) as running_jobs,
           coalesce((u.running_machines ->> g.machine_type)::int, 0) as in_use,
           coalesce(r.machines, 0) as machines_running,
           ${l.jobs} as max_jobs, ${l.machines} as max_machines,
           (coalesce(u.usage * power(0.5, extract(epoch from now() - u.decayed_at) / ${s.halfLifeSeconds}), 0)
             + coalesce(r.machines * extract(epoch from now()) - u.running_started_sum, 0))
             / coalesce((select q.shares from owner_quotas q where q.owner_type = g.owner_type and q.owner_id = g.owner_id), 1) as fair
    from g left join owner_usage u on u.owner_type = g.owner_type and u.owner_id = g.owner_id
    left join lateral (select sum(value::int) as machines from jsonb_each_text(u.running_machines)) r on true
  ),
  pick as (
    select j.id, j.owner_type, j.owner_id, j.machine_type, j.machine_count
    from (select * from c
          where (max_jobs is null or running_jobs < max_jobs)
            and (max_machines is null or max_machines < 0 or in_use + machine_count <= max_machines)
          order by fair, machines_running, priority_rank desc, created_at limit ${CANDIDATE_GROUPS}) c
    cross join lateral (
      select j.id, j.owner_type, j.owner_id, j.machine_type, j.machine_count from jobs j
      where j.status = 'queued' and j.owner_type = c.owner_type and j.owner_id = c.owner_id and j.machine_type = c.machine_type
      order by j.priority_rank desc, j.created_at, j.id limit 1 for update skip locked) j
    limit 1
  ),
  take as (${takeSlotCte('take', 'pick', s).sql}),
  upd as (
    update jobs j set status = 'starting', worker_id = ${workerId}::uuid, claimed_at = now(), updated_at = now()
    from pick, take where j.id = pick.id
    returning j.*, 'queued'::text as from_status
  ),
  ins as (
    insert into job_transitions (job_id, from_status, to_status, at)
    select id, from_status, status, updated_at from upd returning id as seq
  )
  select ${raw(jobColumns)}, upd.from_status, (select count(*) from pick) as picked,
         case when upd.id is not null then pg_notify(${CHANNELS.jobs}, ${eventSql}) end as notified
  from (select 1) one left join (upd cross join ins) on true`;
}

/**
 * Each of the jobs `ids` (of any owner): if queued, its place in its owner's queue (1: its owner's
 * next job) and, if a quota holds it, why. A position is counted over at most `cap` jobs ahead
 * (null past it), so a list costs a bounded scan per job.
 */
export function queueInfoSql(ids: readonly string[], s: DispatchSettings, cap: number): Sql {
  const l = limits(s, 'j.owner_type', 'j.owner_id', 'j.machine_type');
  const ahead = (cond: string) =>
    `(select count(*) from (select 1 from jobs q where q.status = 'queued' and q.owner_type = j.owner_type
       and q.owner_id = j.owner_id and ${cond} limit ${cap + 1}) a)`;
  return sql`
  select j.id,
    ${raw(ahead('q.priority_rank > j.priority_rank'))}
      + ${raw(ahead('q.priority_rank = j.priority_rank and (q.created_at, q.id) < (j.created_at, j.id)'))} as ahead,
    case when ${l.jobs} is not null and coalesce(u.running_jobs, 0) >= ${l.jobs}
           then format('QuotaExceeded: %s of %s running jobs', coalesce(u.running_jobs, 0), ${l.jobs})
         when ${l.machines} >= 0 and coalesce((u.running_machines ->> j.machine_type)::int, 0) + j.machine_count > ${l.machines}
           then format('QuotaExceeded: %s of %s %s in use', coalesce((u.running_machines ->> j.machine_type)::int, 0),
                       ${l.machines}, j.machine_type)
    end as reason
  from jobs j left join owner_usage u on u.owner_type = j.owner_type and u.owner_id = j.owner_id
  where j.id = any(${`{${ids.join(',')}}`}::uuid[]) and j.status = 'queued'`;
}
