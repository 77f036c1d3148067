import type { MikroORM } from '@mikro-orm/postgresql';
import { prefixedColumns, queryRows, rowReader } from '../db/rows';
import { ctesOf, raw, readsOf, sql, withCtes, type Cte, type Sql, type StatementPart } from '../db/sql';
import { CHANNELS } from '../events/event-bus';
import { BATCH_ITEM_RANK, type Deployment } from './deployment.entity';
import { Job, type JobInput, type JobOutput } from './job.entity';
import type { OwnerType } from '../common/principal';
import { BATCH_CHUNK, BATCH_DISPATCH_TASK, BATCH_PRIORITY, DISPATCH_TASK } from './job.queue';
import { deadlineTaskSql, jobEventSql, queuedCopyCtes } from './job.sql';
import {
  claimSql,
  queueInfoSql,
  takeSlotCte,
  usageEndCte,
  wakeSql,
  type DispatchSettings,
} from './job.dispatch.sql';
import type { Acting, JobStatementParts } from './job.statement-parts.port';
import { FROM, isTerminal, type JobStatus } from './job.states';
import type { WebhookEvent } from './job.webhook-events';

/** What a transition may record beside the new state. */
export interface TransitionFields {
  workerId?: string;
  externalId?: string;
  /** With `running`: where it runs. */
  nodes?: string[];
  exitCode?: number | null;
  error?: string | null;
  output?: JobOutput | null;
  logTail?: string;
  /** With `succeeded`: the job's stored outputs become live in the same statement. */
  publishOutputs?: boolean;
  /**
   * With `failed`: the infrastructure failed, not the program. Recorded on the job; while the job
   * has automatic retries left (`attempt <= max_retries`) and its deadline has not passed, the
   * same statement queues its next attempt.
   */
  infrastructure?: boolean;
  /**
   * With `failed` and `infrastructure`: nothing of the job ran (its worker gave it up before
   * starting it, as it shut down). Its retry is queued whatever `max_retries` says, as the same
   * attempt: a shutdown costs the job no retry.
   */
  neverRan?: boolean;
  /** Made by a caller: its record is written in the same statement, if the job moves. */
  acting?: Acting | null;
}

/** A deployment and its first job to create (plain entity objects, their ids and defaults set). */
export interface NewDeployment {
  deployment: Deployment;
  job: Job;
  /** Seconds until the job is canceled if unfinished (`Cancel-After`); null: never. */
  cancelAfter: number | null;
  /** The worker of this process that claims the job in the creating statement; null: queued. */
  claimFor: string | null;
  /** Parts of this one request (the Idempotency-Key's record), beside the wired ones. */
  parts: readonly StatementPart[];
  /** The caller and its action, recorded in the same statement (JobStatementParts.acted). */
  acting: Acting;
}

/**
 * The writes of the job lifecycle's aggregate: deployments, jobs, their transitions and log
 * batches, and the queue tasks that move them, each change in one statement (docs/architecture.md,
 * "The job lifecycle"; its reads are in JobQueries). The statements are built of CTE parts
 * (db/sql.ts); other modules add theirs through `parts`.
 */
export class JobStore {
  constructor(
    private readonly orm: MikroORM,
    private readonly parts: JobStatementParts,
    /** Fair share's half-life and the default quotas (GovernanceConfig). */
    private readonly dispatch: DispatchSettings = DEFAULT_DISPATCH,
  ) {}

  /**
   * The service's hottest write, in one round trip and atomically: the deployment, its job and
   * first transition (and, claimed, its second), the wired parts (a model's run count), the
   * dispatch task unless claimed (so a job is dispatched if and only if it was created), its
   * deadline task and its events, in order (sent on commit), and the request's own parts.
   * A claim holds only while no job is queued at all (a queued job is owed the slot by fair share,
   * docs/governance.md) and within the owner's quotas, counted as the dispatch's claim counts them.
   */
  async createDeployment(
    n: NewDeployment,
  ): Promise<{ createdAt: Date; deadlineAt: Date | null; claimed: boolean }> {
    const { deployment: d, job } = n;
    const wired = this.parts.created.map((part) => part({ jobs: 'j' }));
    const own = [...n.parts, ...this.acted(n.acting, { from: 'd' })];
    const ctes: Cte[] = [
      {
        name: 'd',
        sql: sql`
         insert into deployments (id, owner_type, owner_id, name, model_id, args, source_asset_id, target_asset_id,
                                  webhook, webhook_events_filter, priority, created_at)
         values (${d.id}, ${d.ownerType}, ${d.ownerId}, ${d.name}, ${d.modelId}, ${JSON.stringify(d.args)}::jsonb,
                 ${d.sourceAssetId}, ${d.targetAssetId}, ${d.webhook}, ${`{${d.webhookEventsFilter.join(',')}}`}::text[],
                 ${d.priority}, ${d.createdAt}) returning id`,
      },
      ...ctesOf(own),
      {
        name: 'me',
        sql: sql`select ${job.ownerType}::text as owner_type, ${job.ownerId}::uuid as owner_id,
                        ${job.machineType}::text as machine_type, ${job.machineCount}::int as machine_count`,
      },
      takeSlotCte(
        'slot',
        'me',
        this.dispatch,
        sql`${n.claimFor}::uuid is not null and not exists (select 1 from jobs where status = 'queued')`,
      ),
      // The owner's row, for the claims of its queued jobs (made by `slot` when it claims). Only
      // when missing: an insert that meets the row waits for whoever holds it. `j` reads it, so
      // it runs before the model's row is locked (its run count reads `j`): a data-modifying CTE
      // that no row reads runs after the main query, and a new owner's first creations then
      // held the model's row while waiting for another's usage row, and that one the reverse.
      {
        name: 'owner_row',
        sql: raw(`insert into owner_usage (owner_type, owner_id) select owner_type, owner_id from me
                  where not exists (select 1 from slot)
                    and not exists (select 1 from owner_usage u where u.owner_type = me.owner_type and u.owner_id = me.owner_id)
                  on conflict do nothing returning 1`),
      },
      {
        name: 'w',
        sql: sql`select ${n.claimFor}::uuid as id from slot`,
      },
      {
        name: 'j',
        sql: sql`
         insert into jobs (id, deployment_id, model_id, model_version_id, secrets, owner_type, owner_id, status, worker_id,
                           claimed_at, executor, argv, inputs, container, machine_type, machine_count, priority_rank,
                           timeout_seconds, max_retries, deadline_at, log_tail, created_at, updated_at)
         select ${job.id}, d.id, ${job.modelId}, ${job.modelVersionId}, ${`{${job.secrets.join(',')}}`}::text[],
                ${job.ownerType}, ${job.ownerId},
                case when w.id is null then 'queued' else 'starting' end, w.id,
                case when w.id is null then null else now() end, ${job.executor},
                ${JSON.stringify(job.argv)}::jsonb, ${JSON.stringify(job.inputs)}::jsonb, ${job.container},
                ${job.machineType}, ${job.machineCount}, ${job.priorityRank}, ${job.timeoutSeconds}, ${job.maxRetries},
                now() + make_interval(secs => ${n.cancelAfter}::double precision), '', now(), now()
                from d cross join (select count(*) from owner_row) owner_row left join w on true
         returning *`,
      },
      {
        name: 't',
        sql: raw(`insert into job_transitions (job_id, from_status, to_status, at)
             select j.id, s.from_status, s.to_status, j.created_at
             from j, (values (1, null, 'queued'), (2, 'queued', 'starting')) as s(n, from_status, to_status)
             where s.n = 1 or j.worker_id is not null order by s.n
             returning id as seq, from_status, to_status`),
      },
      ...ctesOf(wired),
      {
        name: 'q',
        sql: sql`select case when j.worker_id is null then (select 1 from graphile_worker.add_job(${DISPATCH_TASK},
                      json_build_object('jobId', j.id::text), max_attempts => 5)) end,
                    ${deadlineTaskSql('j')} from j`,
      },
    ];
    const statement = withCtes(
      ctes,
      sql`select j.created_at, j.deadline_at, j.worker_id is not null as claimed,
              pg_notify(${CHANNELS.jobs}, ${jobEventSql('j', 't.seq', 't.from_status', 't.to_status')})
              ${readsOf([...own, ...wired])}
       from j, t, q order by t.seq`,
    ).compile();
    const [first] = await queryRows(this.orm.em, statement.text, statement.params, true);
    return {
      createdAt: new Date(first.created_at as string),
      deadlineAt: first.deadline_at === null ? null : new Date(first.deadline_at as string),
      claimed: first.claimed as boolean,
    };
  }

  /**
   * The claim of a dispatch task's worker (claimSql): the best queued job by fair share, priority
   * and age within the quotas, moved to `starting` for `workerId`. Null when none may start now;
   * a job picked whose owner's last slot another claim took meanwhile is looked for again.
   */
  async claimNext(workerId: string): Promise<Job | null> {
    const statement = claimSql(
      workerId,
      this.dispatch,
      prefixedColumns(this.orm, Job, 'upd', ''),
      jobEventSql('upd', 'ins.seq', 'upd.from_status'),
    ).compile();
    for (let attempt = 0; attempt < 5; attempt++) {
      const [row] = await queryRows(this.orm.em, statement.text, statement.params, true);
      if (row.id !== null) return rowReader(this.orm, Job)(row);
      if (Number(row.picked) === 0) return null;
    }
    return null;
  }

  /**
   * Of the jobs `ids`, those queued: their place in their owner's queue (null past `cap` jobs
   * ahead) and the quota that holds them, if one does (queueInfoSql).
   */
  async queueInfo(
    ids: readonly string[],
    cap: number,
  ): Promise<Map<string, { position: number | null; reason: string | null }>> {
    const statement = queueInfoSql(ids, this.dispatch, cap).compile();
    const rows: { id: string; ahead: string; reason: string | null }[] = await this.orm.em
      .fork()
      .execute(statement.text, statement.params);
    return new Map(
      rows.map((r) => [
        r.id,
        { position: Number(r.ahead) > cap ? null : Number(r.ahead) + 1, reason: r.reason },
      ]),
    );
  }

  /** A queued copy of the job `jobId` (a retry its owner asked for), linked to it; its deadline anew. */
  async copyForRetry(jobId: string, cancelAfter: number | null, acting: Acting): Promise<Job> {
    const em = this.orm.em.fork();
    const acted = this.acted(acting, { from: 'r_job', targetSql: 'r_job.id::text' });
    const statement = withCtes(
      [
        {
          name: 'src',
          sql: sql`select j.*, null::uuid as new_id, 1 as new_attempt,
                           now() + make_interval(secs => ${cancelAfter}::double precision) as new_deadline
                    from jobs j where j.id = ${jobId}`,
        },
        ...queuedCopyCtes('r', 'src'),
        ...ctesOf(acted),
      ],
      raw('select r_job.* from r_job, r_go'),
    ).compile();
    const rows: Record<string, unknown>[] = await em.execute(statement.text, statement.params);
    return em.map(Job, rows[0]);
  }

  /**
   * Moves a job to `to` if its current state allows it, in one statement: lock the row, check,
   * update, record the transition, and NOTIFY (sent only if the change commits); with the webhook
   * messages of `events`, the outputs published and an automatic retry queued as `fields` say.
   * Answers the job and its previous state, with the automatic retry's id; null when it did not
   * move (a job that has meanwhile gone elsewhere, say canceled, is left alone).
   */
  async transition(
    jobId: string,
    to: JobStatus,
    fields: TransitionFields,
    events: readonly WebhookEvent[],
  ): Promise<{ job: Job; from: JobStatus | null; retryId: string | null } | null> {
    const ctes: Cte[] = [
      { name: 'prev', sql: sql`select id, status from jobs where id = ${jobId} for update` },
      {
        name: 'upd',
        sql: sql`
         update jobs j set status = ${to}, updated_at = now()${setsFor(to, fields)}
         from prev where j.id = prev.id and prev.status = any(${`{${FROM[to].join(',')}}`}::text[])
         returning j.*, prev.status as from_status`,
      },
      {
        name: 'ins',
        sql: raw(`insert into job_transitions (job_id, from_status, to_status, at)
               select id, from_status, status, updated_at from upd returning id as seq`),
      },
      // The change's record, if a caller made it (written only if the job moves).
      ...ctesOf(fields.acting ? this.acted(fields.acting, { from: 'upd' }) : []),
    ];
    if (fields.publishOutputs)
      ctes.push({
        name: 'outputs',
        sql: raw(`update media_assets set status = 'live', created_at = now()
                       where job_id in (select id from upd) and status = 'uploading'`),
      });
    // Read in the final select (after the event), so that PostgreSQL runs them.
    const parts: StatementPart[] = [];
    if (to === 'failed' && fields.infrastructure)
      parts.push({
        ctes: [
          {
            name: 'src',
            sql: raw(
              fields.neverRan
                ? `select upd.*, null::uuid as new_id, upd.attempt as new_attempt, upd.deadline_at as new_deadline
                     from upd where upd.deadline_at is null or upd.deadline_at > now()`
                : `select upd.*, null::uuid as new_id, upd.attempt + 1 as new_attempt, upd.deadline_at as new_deadline
                     from upd where upd.attempt <= upd.max_retries
                     and (upd.deadline_at is null or upd.deadline_at > now())`,
            ),
          },
          ...queuedCopyCtes('retry', 'src'),
        ],
        reads: [
          raw('(select count(*) from retry_go) as retried'),
          raw('(select id from retry_job) as retry_id'),
        ],
      });
    if (events.length) parts.push(this.parts.events({ jobs: 'upd', events }));
    // What the job cost goes into the owner's spend in the statement that ends it.
    if (isTerminal(to)) parts.push(this.parts.ended({ jobs: 'upd' }));
    // A job that held a slot gives it back to its owner's counters, its usage counted (fair
    // share), and wakes a dispatch for the jobs that wait (some perhaps for this very slot).
    if (to === 'succeeded' || to === 'failed' || to === 'canceled')
      parts.push({ ctes: [usageEndCte('usage_end', 'upd', this.dispatch)], reads: [wakeSql('upd')] });
    const statement = withCtes(
      [...ctes, ...ctesOf(parts)],
      sql`select ${raw(prefixedColumns(this.orm, Job, 'upd', ''))}, upd.from_status,
              pg_notify(${CHANNELS.jobs}, ${jobEventSql('upd', 'ins.seq', 'upd.from_status')})
              ${readsOf(parts)}
       from upd, ins`,
    ).compile();
    const rows = await queryRows(this.orm.em, statement.text, statement.params, true);
    if (rows.length !== 1) return null;
    const [row] = rows;
    return {
      // A plain row, not an entity the ORM tracks: hydrating it cost more than the statement here.
      job: rowReader(this.orm, Job)(row),
      from: row.from_status as JobStatus | null,
      retryId: (row.retry_id as string | null | undefined) ?? null,
    };
  }

  /**
   * Publishes a batch of a running job's lines (`event` on CHANNELS.jobLogs), in one statement:
   * the batch is kept for replay while the job's kept output is under `keptBytes`, takes its id
   * from the transitions' sequence (`seq`), and the wired parts (a `logs` webhook message) added.
   */
  async publishLines(jobId: string, lines: string, event: string, keptBytes: number): Promise<void> {
    const bytes = Buffer.byteLength(lines);
    const parts = [this.parts.lines(sql`${jobId}`)];
    const statement = withCtes(
      [
        {
          name: 's',
          sql: sql`select nextval('job_transitions_id_seq') as seq,
                         coalesce((select total_bytes from job_log_batches where job_id = ${jobId} order by id desc limit 1), 0) as kept`,
        },
        {
          name: 'b',
          sql: sql`insert into job_log_batches (id, job_id, lines, total_bytes, at)
             select s.seq, ${jobId}, ${lines}::jsonb, s.kept + ${bytes}, now() from s where s.kept + ${bytes} <= ${keptBytes} returning id`,
        },
        ...ctesOf(parts),
      ],
      sql`select pg_notify(${CHANNELS.jobLogs}, (${event}::jsonb || jsonb_build_object('seq', s.seq))::text),
              (select count(*) from b)${readsOf(parts)}
       from s`,
    ).compile();
    await this.orm.em.fork().execute(statement.text, statement.params);
  }

  /** Keeps the stored log tail current while a job runs (not a transition). */
  async saveLogTail(jobId: string, logTail: string): Promise<void> {
    await this.orm.em.fork().nativeUpdate(Job, { id: jobId }, { logTail });
  }

  /** A detached executor's handle of a job still `starting` with the worker `workerId`. */
  async recordSubmission(jobId: string, workerId: string, externalId: string): Promise<void> {
    await this.orm.em
      .fork()
      .execute(`update jobs set external_id = ? where id = ? and worker_id = ? and status = 'starting'`, [
        externalId,
        jobId,
        workerId,
      ]);
  }

  /** Pending reasons of `starting` jobs, in one statement. */
  async notePending(reasons: ReadonlyMap<string, string | null>): Promise<void> {
    await this.orm.em.fork().execute(
      `update jobs j set pending_reason = n.reason
       from jsonb_to_recordset(?::jsonb) as n(id uuid, reason text) where j.id = n.id and j.status = 'starting'`,
      [JSON.stringify([...reasons].map(([id, reason]) => ({ id, reason })))],
    );
  }

  /**
   * Jobs some worker should be following (`starting`, `running`, or canceled and not yet let go)
   * except those of the live workers `others`.
   */
  async followedExcept(others: readonly string[]): Promise<FollowedRow[]> {
    return this.orm.em.fork().execute(
      `select id, worker_id, external_id, executor, status from jobs
       where (status in ('starting', 'running') or (status = 'canceled' and worker_id is not null))
         and (worker_id is null or worker_id <> all(?::uuid[]))`,
      [`{${others.join(',')}}`],
    );
  }

  /**
   * Moves a job that `from` (a worker that is gone, or none) was following to `to`; only one
   * worker gets it. Answers the job, or null when another worker was faster or it has ended.
   */
  async takeOver(jobId: string, from: string | null, to: string): Promise<Job | null> {
    const em = this.orm.em.fork();
    const rows: Record<string, unknown>[] = await em.execute(
      `update jobs set worker_id = ? where id = ? and worker_id is not distinct from ?::uuid
         and (status in ('starting', 'running') or status = 'canceled') returning *`,
      [to, jobId, from],
    );
    return rows.length ? em.map(Job, rows[0]) : null;
  }

  /** Nothing of the job is left on the executor: no worker needs to follow it any more. */
  async releaseWorker(jobId: string, workerId: string): Promise<void> {
    await this.orm.em
      .fork()
      .execute('update jobs set worker_id = null where id = ? and worker_id = ?', [jobId, workerId]);
  }

  /**
   * A batch's items in one statement whatever their number (set-based: the items are one JSON
   * parameter): the batch's row (`n.parts`), the deployments, their queued jobs (`batch_id`
   * set), their first transitions, the wired parts (a model's run count), the caller's record,
   * the dispatch tasks (one per BATCH_CHUNK jobs, at BATCH_PRIORITY, added together by
   * graphile_worker.add_jobs) and each job's `queued` event. Answers the creation time.
   */
  async createItems(n: NewItems): Promise<Date> {
    const wired = this.parts.created.map((part) => part({ jobs: 'j' }));
    const own = [...n.parts, ...this.acted(n.acting, { from: 'batch_row' })];
    const items = JSON.stringify(
      n.items.map((i, k) => ({
        n: k,
        d_id: i.deploymentId,
        job_id: i.jobId,
        name: i.name,
        args: i.args,
        source: i.sourceAssetId,
        target: i.targetAssetId,
        argv: i.argv,
        inputs: i.inputs,
      })),
    );
    const ctes: Cte[] = [
      {
        name: 'items',
        sql: sql`select * from jsonb_to_recordset(${items}::jsonb)
                   as x(n int, d_id uuid, job_id uuid, name text, args jsonb, source uuid, target uuid, argv jsonb, inputs jsonb)`,
      },
      ...ctesOf(own),
      // The owner's row for the claims of these jobs (JobStore.createDeployment's `owner_row`),
      // read by `j` so that it is made before the model's row is locked.
      {
        name: 'owner_row',
        sql: sql`insert into owner_usage (owner_type, owner_id)
                 select ${n.owner.type}, ${n.owner.id}::uuid
                 where not exists (select 1 from owner_usage u where u.owner_type = ${n.owner.type} and u.owner_id = ${n.owner.id}::uuid)
                 on conflict do nothing returning 1`,
      },
      {
        name: 'd',
        sql: sql`
         insert into deployments (id, owner_type, owner_id, name, model_id, args, source_asset_id, target_asset_id,
                                  webhook, webhook_events_filter, created_at)
         select d_id, ${n.owner.type}, ${n.owner.id}, name, ${n.modelId}, args, source, target, null, '{}', now()
         from items returning id`,
      },
      {
        name: 'j',
        sql: sql`
         insert into jobs (id, deployment_id, batch_id, batch_item, model_id, model_version_id, secrets, owner_type, owner_id,
                           status, executor, argv, inputs, container, machine_type, machine_count, priority_rank,
                           timeout_seconds, max_retries, log_tail, created_at, updated_at)
         select items.job_id, items.d_id, batch_row.id, items.n, ${n.modelId}, ${n.modelVersionId},
                ${`{${n.secrets.join(',')}}`}::text[], ${n.owner.type}, ${n.owner.id}, 'queued', ${n.executor},
                items.argv, items.inputs, ${n.container}, ${n.machineType}, ${n.machineCount}, ${BATCH_ITEM_RANK},
                ${n.timeoutSeconds},
                ${n.maxRetries}, '', now(), now()
         from items cross join batch_row cross join (select count(*) from owner_row) owner_row
         returning *`,
      },
      ...transitionCtes('j', 'null::text'),
      ...ctesOf(wired),
      {
        name: 'q',
        sql: batchDispatchSql('j'),
      },
    ];
    const statement = withCtes(
      ctes,
      sql`select (select created_at from batch_row) as created_at, (select count(*) from q) as tasks,
              (select count(*) from (select pg_notify(${CHANNELS.jobs}, ${jobEventSql('j_seq', 'j_seq.seq', 'null::text')})
                                     from j_seq) e) as events
              ${readsOf([...own, ...wired])}`,
    ).compile();
    const [row] = await queryRows(this.orm.em, statement.text, statement.params, true);
    return new Date(row.created_at as string);
  }

  /**
   * Cancels every job of the batch `batchId` that has not ended, in one statement, as a job's
   * cancel does for one: each moves, is recorded, its event sent (its worker stops it on the
   * executor) and its webhook messages written; `batchParts` (the batch's own row) and the
   * caller's record join it. Answers the jobs moved.
   */
  async cancelBatch(
    batchId: string,
    batchParts: readonly StatementPart[],
    acting: Acting,
  ): Promise<{ job: Job; from: JobStatus }[]> {
    const parts: StatementPart[] = [
      ...batchParts,
      this.parts.events({ jobs: 'upd', events: ['completed'] }),
      ...this.acted(acting, { from: 'batch_row' }),
      // As a job's cancel: what the running ones cost joins the spend, and they give their slots back.
      this.parts.ended({ jobs: 'upd' }),
      { ctes: [usageEndCte('usage_end', 'upd', this.dispatch)], reads: [wakeSql('upd', 1)] },
    ];
    const ctes: Cte[] = [
      {
        name: 'prev',
        sql: sql`select id, status from jobs where batch_id = ${batchId}
                   and status = any(${`{${FROM.canceled.join(',')}}`}::text[]) order by id for update`,
      },
      {
        name: 'upd',
        sql: sql`update jobs j set status = 'canceled', updated_at = now()${setsFor('canceled', {})}
                 from prev where j.id = prev.id and prev.status = any(${`{${FROM.canceled.join(',')}}`}::text[])
                 returning j.*, prev.status as from_status`,
      },
      ...transitionCtes('upd', 'from_status'),
      ...ctesOf(parts),
    ];
    const statement = withCtes(
      ctes,
      sql`select ${raw(prefixedColumns(this.orm, Job, 'upd_seq', ''))}, upd_seq.from_status,
              pg_notify(${CHANNELS.jobs}, ${jobEventSql('upd_seq', 'upd_seq.seq', 'upd_seq.from_status')})
              ${readsOf(parts)}
       from upd_seq`,
    ).compile();
    // (The batch's row and the caller's record are data-modifying: they run with no job moved.)
    const rows = await queryRows(this.orm.em, statement.text, statement.params, true);
    const read = rowReader(this.orm, Job);
    return rows.map((r) => ({ job: read(r), from: r.from_status as JobStatus }));
  }

  /**
   * Queues a copy of every failed job of the batch `batchId` that no later job retries yet (as a
   * job's retry does, linked by `retry_of`, in the same batch), in one statement, with the
   * caller's record (once) and `batchParts` (which may read the new jobs, CTE `r_job`); their
   * dispatch tasks at BATCH_PRIORITY. Answers the new jobs.
   */
  async retryBatch(batchId: string, batchParts: readonly StatementPart[], acting: Acting): Promise<Job[]> {
    const acted = this.acted(acting, { from: 'batch_src' });
    const statement = withCtes(
      [
        {
          name: 'src',
          sql: sql`select j.*, null::uuid as new_id, 1 as new_attempt, null::timestamptz as new_deadline
                    from jobs j where j.batch_id = ${batchId} and j.status = 'failed'
                    and not exists (select 1 from jobs r where r.retry_of = j.id)
                    for update of j`,
        },
        ...queuedCopyCtes('r', 'src'),
        ...ctesOf(batchParts),
        { name: 'batch_src', sql: raw('select 1 from r_job limit 1') },
        ...ctesOf(acted),
      ],
      sql`select r_job.*, (select count(*) from r_go) as tasks${readsOf(batchParts)} from r_job`,
    ).compile();
    const rows = await queryRows(this.orm.em, statement.text, statement.params, true);
    return rows.map(rowReader(this.orm, Job));
  }

  /**
   * Claims for the worker `workerId` up to `limit` of the jobs `jobIds` still queued, in one
   * statement (`starting`, recorded, their events sent): a batch's chunk, run or submitted
   * together. They count against their owner's quotas and usage as claimed jobs do (the jobs of
   * a chunk share their owner, machine type and machine count), all of them or none: `picked`
   * says how many were queued and free to claim, so that none claimed of some picked means that
   * a quota holds them.
   */
  async claimQueued(
    jobIds: readonly string[],
    workerId: string,
    limit: number,
  ): Promise<{ jobs: Job[]; picked: number }> {
    const statement = withCtes(
      [
        {
          name: 'prev',
          sql: sql`select id, status, owner_type, owner_id, machine_type, machine_count from jobs
                   where id = any(${`{${jobIds.join(',')}}`}::uuid[]) and status = 'queued'
                   order by created_at, id limit ${limit} for update skip locked`,
        },
        {
          name: 'wanted',
          sql: raw(`select owner_type, owner_id, machine_type, sum(machine_count)::int as machine_count,
                           count(*)::int as jobs
                    from prev group by 1, 2, 3`),
        },
        takeSlotCte('take', 'wanted', this.dispatch, raw('true'), 's.jobs'),
        {
          name: 'upd',
          sql: sql`update jobs j set status = 'starting', claimed_at = now(), updated_at = now()${setsFor('starting', { workerId })}
                   from prev where j.id = prev.id and j.status = 'queued' and exists (select 1 from take)
                   returning j.*, prev.status as from_status`,
        },
        ...transitionCtes('upd', 'from_status'),
      ],
      sql`select ${raw(prefixedColumns(this.orm, Job, 'upd_seq', ''))}, (select count(*)::int from prev) as picked,
              case when upd_seq.id is not null then
                pg_notify(${CHANNELS.jobs}, ${jobEventSql('upd_seq', 'upd_seq.seq', 'upd_seq.from_status')}) end
       from (select 1) one left join upd_seq on true order by upd_seq.created_at, upd_seq.id`,
    ).compile();
    const rows = await queryRows(this.orm.em, statement.text, statement.params, true);
    const read = rowReader(this.orm, Job);
    return { jobs: rows.filter((r) => r.id !== null).map(read), picked: Number(rows[0]?.picked ?? 0) };
  }

  /**
   * Moves each job of `moves` to `to` (`running` or `succeeded`) as `transition` moves one, all
   * in one statement: each job's own fields, the same webhook `events` for all. The writes of a
   * worker's many short jobs (a batch's chunk: JobRunner) go together this way. Answers the jobs
   * that moved, with their previous state; a job gone elsewhere meanwhile (canceled) is not.
   */
  async transitionSet(
    to: 'running' | 'succeeded',
    moves: readonly { jobId: string; fields: TransitionFields }[],
    events: readonly WebhookEvent[],
  ): Promise<{ job: Job; from: JobStatus | null }[]> {
    const values = moves.map(({ jobId, fields: f }) => ({
      id: jobId,
      external_id: f.externalId ?? null,
      nodes: f.nodes ?? [],
      exit_code: f.exitCode ?? null,
      log_tail: f.logTail ?? null,
      output: f.output ?? null,
    }));
    // The columns a single transition sets, from each job's values.
    const sets = setsFrom(to, {
      workerId: raw('null'),
      externalId: raw('v.external_id'),
      nodes: raw('v.nodes'),
      exitCode: raw('v.exit_code'),
      error: raw('null'),
      output: raw('v.output'),
      logTail: raw('v.log_tail'),
      infrastructure: raw('false'),
    });
    const ctes: Cte[] = [
      {
        name: 'v',
        sql: sql`select * from jsonb_to_recordset(${JSON.stringify(values)}::jsonb)
                   as x(id uuid, external_id text, nodes jsonb, exit_code int, log_tail text, output jsonb)`,
      },
      // Locked in one order, so that two sets never wait on each other.
      {
        name: 'prev',
        sql: raw('select j.id, j.status from jobs j join v using (id) order by j.id for update of j'),
      },
      {
        name: 'upd',
        sql: sql`update jobs j set status = ${to}, updated_at = now()${sets}
                 from prev, v where j.id = prev.id and v.id = j.id
                   and prev.status = any(${`{${FROM[to].join(',')}}`}::text[])
                 returning j.*, prev.status as from_status`,
      },
      ...transitionCtes('upd', 'from_status'),
    ];
    if (to === 'succeeded')
      ctes.push({
        name: 'outputs',
        sql: raw(`update media_assets set status = 'live', created_at = now()
                  where job_id in (select id from upd) and status = 'uploading'`),
      });
    const parts: StatementPart[] = [];
    if (events.length) parts.push(this.parts.events({ jobs: 'upd', events }));
    if (to === 'succeeded')
      parts.push(this.parts.ended({ jobs: 'upd' }), {
        ctes: [usageEndCte('usage_end', 'upd', this.dispatch)],
        reads: [wakeSql('upd', 1)],
      });
    const statement = withCtes(
      [...ctes, ...ctesOf(parts)],
      sql`select ${raw(prefixedColumns(this.orm, Job, 'upd_seq', ''))}, upd_seq.from_status,
              pg_notify(${CHANNELS.jobs}, ${jobEventSql('upd_seq', 'upd_seq.seq', 'upd_seq.from_status')})
              ${readsOf(parts)}
       from upd_seq`,
    ).compile();
    const rows = await queryRows(this.orm.em, statement.text, statement.params, true);
    const read = rowReader(this.orm, Job);
    return rows.map((r) => ({ job: read(r), from: r.from_status as JobStatus | null }));
  }

  /** One dispatch task per job of `jobIds` still queued, at BATCH_PRIORITY (a chunk taken apart). */
  async dispatchEach(jobIds: readonly string[]): Promise<void> {
    const statement = sql`select graphile_worker.add_jobs(array_agg(
         row(${DISPATCH_TASK}, json_build_object('jobId', id::text), null, null, 5, null, ${BATCH_PRIORITY}, null)::graphile_worker.job_spec))
       from jobs where id = any(${`{${jobIds.join(',')}}`}::uuid[]) and status = 'queued'
       having count(*) > 0`.compile();
    await this.orm.em.fork().execute(statement.text, statement.params);
  }

  /** The jobs of `jobIds` still queued, as one dispatch task of the batch `batchId` (at BATCH_PRIORITY). */
  async requeueChunk(batchId: string, jobIds: readonly string[]): Promise<void> {
    const statement = sql`select graphile_worker.add_job(${BATCH_DISPATCH_TASK},
         json_build_object('batchId', ${batchId}::text, 'jobIds', json_agg(id)), max_attempts => 5, priority => ${BATCH_PRIORITY})
       from jobs where id = any(${`{${jobIds.join(',')}}`}::uuid[]) and status = 'queued' having count(*) > 0`.compile();
    await this.orm.em.fork().execute(statement.text, statement.params);
  }

  /** The record of a caller's action over the rows of `rows.from`, when one is kept. */
  private acted(acting: Acting, rows: { from: string; targetSql?: string }): StatementPart[] {
    const part = this.parts.acted(acting.caller, acting.action, rows);
    return part ? [part] : [];
  }
}

/** Without configuration: a day's half-life, no quotas. */
const DEFAULT_DISPATCH: DispatchSettings = { halfLifeSeconds: 86400, maxRunningJobs: null, maxMachines: {} };

/** A job some worker should be following, as reconciliation reads it. */
export interface FollowedRow {
  id: string;
  worker_id: string | null;
  external_id: string | null;
  executor: string;
  status: JobStatus;
}

/** An ending job's machine time in microseconds (jobs_owner_cost_index orders by it). */
const MACHINE_MICROS = raw(
  'case when j.started_at is null then 0 else j.machine_count * (extract(epoch from greatest(now(), j.started_at) - j.started_at) * 1000000)::bigint end',
);

/** Columns a transition into each state sets, besides status and updated_at (the job row is `j`). */
export function setsFor(to: JobStatus, f: TransitionFields): Sql {
  return setsFrom(to, {
    workerId: sql`${f.workerId ?? null}`,
    externalId: sql`${f.externalId ?? null}`,
    nodes: sql`${JSON.stringify(f.nodes ?? [])}`,
    exitCode: sql`${f.exitCode ?? null}`,
    error: sql`${f.error ?? null}`,
    output: sql`${f.output ? JSON.stringify(f.output) : null}`,
    logTail: sql`${f.logTail ?? null}`,
    infrastructure: sql`${f.infrastructure ?? false}`,
  });
}

/**
 * The same columns, each value an SQL expression: the fields' parameters (setsFor), or the
 * columns of a set's values (JobStore.transitionSet).
 */
function setsFrom(
  to: JobStatus,
  v: Record<keyof Omit<TransitionFields, 'publishOutputs' | 'acting' | 'neverRan'>, Sql>,
): Sql {
  switch (to) {
    case 'starting':
      return sql`, worker_id = ${v.workerId}`;
    case 'running':
      return sql`, external_id = coalesce(${v.externalId}, j.external_id), nodes = ${v.nodes}::jsonb, pending_reason = null, started_at = now(), queue_seconds = extract(epoch from now() - j.created_at)`;
    case 'succeeded':
    case 'failed':
    case 'canceled':
      // A job that never ran has no run time: it costs nothing. Its worker lets go of a job it
      // ended itself; a canceled one it must still stop on the executor (JobService.releaseWorker).
      return sql`${raw(to === 'canceled' ? '' : ', worker_id = null')}, pending_reason = null, finished_at = now(), run_seconds = case when j.started_at is null then null else extract(epoch from now() - j.started_at) end, machine_micros = ${MACHINE_MICROS}, exit_code = ${v.exitCode}, error = ${v.error}, output = ${v.output}::jsonb, log_tail = coalesce(${v.logTail}, j.log_tail), infrastructure_failure = ${v.infrastructure}`;
    case 'queued':
      throw new Error('a job is queued only when it is created');
  }
}

/** One item of a batch: a deployment and its first job, built and checked by DeploymentService. */
export interface NewItem {
  deploymentId: string;
  jobId: string;
  name: string;
  args: Record<string, unknown>;
  sourceAssetId: string | null;
  targetAssetId: string;
  argv: string[];
  inputs: JobInput[];
}

/** What every item of a batch shares (the model's, copied into each job as createDeployment does). */
export interface NewItems {
  batchId: string;
  owner: { type: OwnerType; id: string };
  modelId: string;
  /** The model version every item runs, and the secrets it names (delivered at dispatch). */
  modelVersionId: string;
  secrets: readonly string[];
  executor: string;
  container: string;
  machineType: string;
  machineCount: number;
  timeoutSeconds: number;
  maxRetries: number;
  items: readonly NewItem[];
  /** The batch's own row (the batches module's part): in the same statement, named `batch_row`. */
  parts: readonly StatementPart[];
  /** The caller and its action, recorded once for the batch row (`batch_row`). */
  acting: Acting;
}

/**
 * The dispatch tasks of a batch's new jobs `j`: one per BATCH_CHUNK of them, carrying their ids,
 * at BATCH_PRIORITY, added in one call (graphile_worker.add_jobs).
 */
function batchDispatchSql(j: string): Sql {
  return sql`select graphile_worker.add_jobs(array_agg(spec)) from (
      select row(${BATCH_DISPATCH_TASK}, json_build_object('batchId', min(batch_id::text), 'jobIds', json_agg(id)),
                 null, null, 5, null, ${BATCH_PRIORITY}, null)::graphile_worker.job_spec as spec
      from (select id, batch_id, row_number() over () - 1 as k from ${raw(j)}) c group by k / ${BATCH_CHUNK}) chunks
    having count(*) > 0`;
}

/**
 * The transitions of many changed jobs `rows` (with their previous state in the column `from`):
 * `<rows>_seq` is each row with its transition's id (`seq`), taken before the insert
 * (`<rows>_tr`), so that their events are read from `<rows>_seq` alone. Joining two CTEs of
 * thousands of rows each, whose sizes PostgreSQL cannot estimate, took a nested loop: seconds
 * for a 10,000-item batch.
 */
function transitionCtes(rows: string, from: string): Cte[] {
  return [
    {
      name: `${rows}_seq`,
      sql: raw(`select nextval('job_transitions_id_seq') as seq, ${rows}.* from ${rows}`),
    },
    {
      name: `${rows}_tr`,
      sql: raw(`insert into job_transitions (id, job_id, from_status, to_status, at)
                select seq, id, ${from}, status, updated_at from ${rows}_seq returning id`),
    },
  ];
}
