import type { MikroORM } from '@mikro-orm/postgresql';
import { assertOwned, ownerOf, type Owner, type Principal } from '../auth/principal';
import type { AuditLog } from '../teams/audit.service';
import { authorize } from '../teams/team.roles';
import { AppError } from '../common/errors';
import { isUuid } from '../common/ids';
import type { Page, PageArgs } from '../common/pagination';
import { sqlPage } from '../db/sql-page';
import { prefixedColumns, queryRows, rowReader } from '../db/rows';
import { Deployment } from '../deployments/deployment.entity';
import { Model } from '../models/model.entity';
import { CHANNELS } from '../events/event-bus';
import { Job, JobTransition, type JobOutput } from './job.entity';
import { jobEventSql, queuedCopySql } from './job.queue';
import { LOG_TAIL_BYTES, type LogLine } from './job.log';
import { enqueueDeliveriesSql, enqueueLogsSql } from '../webhooks/webhook.sql';
import type { WebhookEvent } from '../webhooks/webhook.events';
import type { JobLifecycle } from './job.lifecycle';
import { FROM, isTerminal, type JobStatus } from './job.states';

export interface JobFilter {
  status?: JobStatus | null;
  modelId?: string | null;
}

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
  /** An audit record's statement part (AuditLog.statementPart over `upd`), written if the job moves. */
  audit?: { sql: string; params: unknown[] } | null;
}

/** The payload of a job event on CHANNELS.jobs. */
export interface JobEvent {
  jobId: string;
  ownerType: Owner['type'];
  ownerId: string;
  status: JobStatus;
  from: JobStatus | null;
  at: string;
  /** The transition's id: increasing, so a subscriber can tell what it has already seen. */
  seq: number;
  /** The job as the transition left it (see jobEventSql); absent from events re-read after a gap. */
  job?: JobSnapshot;
}

/**
 * A job's columns in its events, by their Job property names (`deploymentId` for the relation;
 * times as ISO text). The large ones are there only when small enough (see jobEventSql).
 */
export type JobSnapshot = Partial<Record<keyof Job | 'deploymentId', unknown>>;

/** How much of a job's output is kept for replay (`job_log_batches`); the last 64 KiB are in its log tail. */
export const STORED_LOG_BYTES = 8 * 1024 * 1024;

/** The webhook events a transition causes (`logs` come from published lines). */
function webhookEventsOf(to: JobStatus, f: TransitionFields): WebhookEvent[] {
  if (to === 'running') return ['start'];
  if (!isTerminal(to)) return [];
  const output = to === 'succeeded' && (f.output?.files.length || (f.output?.result ?? null) !== null);
  return output ? ['output', 'completed'] : ['completed'];
}

/** Columns a transition into each state sets, besides status and updated_at. */
function setsFor(to: JobStatus, f: TransitionFields): { sql: string; params: unknown[] } {
  switch (to) {
    case 'starting':
      return { sql: ', worker_id = ?', params: [f.workerId ?? null] };
    case 'running':
      return {
        sql:
          ', external_id = coalesce(?, j.external_id), nodes = ?::jsonb, pending_reason = null,' +
          ' started_at = now(), queue_seconds = extract(epoch from now() - j.created_at)',
        params: [f.externalId ?? null, JSON.stringify(f.nodes ?? [])],
      };
    case 'succeeded':
    case 'failed':
    case 'canceled':
      return {
        // A job that never ran has no run time: it costs nothing. Its worker lets go of a job it
        // ended itself; a canceled one it must still stop on the executor (JobService.releaseWorker).
        sql:
          (to === 'canceled' ? '' : ', worker_id = null') +
          ', pending_reason = null, finished_at = now(), run_seconds = case when j.started_at is null then null' +
          ' else extract(epoch from now() - j.started_at) end,' +
          ' exit_code = ?, error = ?, output = ?::jsonb, log_tail = coalesce(?, j.log_tail),' +
          ' infrastructure_failure = ?',
        params: [
          f.exitCode ?? null,
          f.error ?? null,
          f.output ? JSON.stringify(f.output) : null,
          f.logTail ?? null,
          f.infrastructure ?? false,
        ],
      };
    case 'queued':
      throw new Error('a job is queued only when it is created');
  }
}

/** A job of a list, with its model when the list was asked for it. */
export type JobRow = Job & { model?: Model | null };

/** Which entity properties JobService.list reads (see there). */
export interface JobListRead {
  job: Iterable<string> | null;
  deployment?: Iterable<string> | null;
  model?: Iterable<string> | null;
}

export class JobService {
  constructor(
    private readonly orm: MikroORM,
    /** Told of each transition this process makes (log lines, metrics). */
    private readonly lifecycle: JobLifecycle | null = null,
    /** Cancellations for a team leave audit records. */
    private readonly audit: AuditLog | null = null,
  ) {}

  /**
   * The owner's jobs, newest first. With `nested`, each job carries its deployment (in
   * `deployment`) and its model (in `model`, null once deleted), read in the same statement.
   */
  /**
   * A page of the owner's jobs in one statement. `read` names the entity properties wanted of the
   * job and of the deployment and model to join (null: all of them; a nested one left out: not
   * joined); the properties of columns not read are left undefined.
   */
  async list(
    principal: Principal,
    filter: JobFilter,
    args: PageArgs,
    read: JobListRead = { job: null },
  ): Promise<Page<JobRow>> {
    if (filter.modelId && !isUuid(filter.modelId))
      throw AppError.validation({ modelId: 'must be a model id' });
    const owner = ownerOf(principal);
    const conditions: [string, ...unknown[]][] = [
      ['j.owner_type = ?', owner.type],
      ['j.owner_id = ?', owner.id],
    ];
    if (filter.status) conditions.push(['j.status = ?', filter.status]);
    if (filter.modelId) conditions.push(['j.model_id = ?', filter.modelId.toLowerCase()]);
    // Plain rows in one statement: hydrating 50 jobs through the ORM cost more than the query,
    // and the deployment and model a query asks for come in the same statement. Only the
    // columns asked for are read: decoding unused ones (a model's arguments) was most of the cost.
    const job = rowReader(this.orm, Job);
    const deployment = rowReader(this.orm, Deployment, 'd.');
    const model = rowReader(this.orm, Model, 'm.');
    const keys = ['id', 'createdAt', 'status', 'deployment', 'modelId'];
    const select = [prefixedColumns(this.orm, Job, 'j', '', read.job && [...keys, ...read.job])];
    let from = 'jobs j';
    if (read.deployment !== undefined) {
      select.push(
        prefixedColumns(this.orm, Deployment, 'd', 'd.', read.deployment && ['id', ...read.deployment]),
      );
      from += ' join deployments d on d.id = j.deployment_id';
    }
    if (read.model !== undefined) {
      select.push(prefixedColumns(this.orm, Model, 'm', 'm.', read.model && ['id', ...read.model]));
      from += ' left join models m on m.id = j.model_id';
    }
    return sqlPage(this.orm.em, { from, select: select.join(', '), alias: 'j' }, conditions, args, (row) => {
      const j: JobRow = job(row);
      if (read.deployment !== undefined) j.deployment = deployment(row);
      if (read.model !== undefined) j.model = row['m.id'] === null ? null : model(row);
      return j;
    });
  }

  async get(principal: Principal, id: string): Promise<Job> {
    return assertOwned(await this.byId(id), principal, 'job');
  }

  /** Any job by id, without an access check (workers and event feeds). */
  async byId(id: string): Promise<Job | null> {
    return isUuid(id) ? this.orm.em.fork().findOne(Job, { id: id.toLowerCase() }) : null;
  }

  /** The jobs of deployments, newest first (a deployment has more than one once retried). */
  async byDeploymentIds(ids: readonly string[]): Promise<Job[]> {
    return this.orm.em
      .fork()
      .find(Job, { deployment: { $in: [...ids] } }, { orderBy: { createdAt: 'desc', id: 'desc' } });
  }

  /** The automatic retry queued when this job failed, if any. */
  async automaticRetryOf(jobId: string): Promise<string | null> {
    const [row] = await this.orm.em
      .fork()
      .execute('select id from jobs where retry_of = ? and attempt > 1 limit 1', [jobId]);
    return (row?.id as string | undefined) ?? null;
  }

  /** The deadline task (`Cancel-After`): a job that has not ended is canceled, saying why. */
  async cancelAtDeadline(jobId: string): Promise<void> {
    const job = await this.byId(jobId);
    if (!job?.deadlineAt || isTerminal(job.status)) return;
    await this.transition(job.id, 'canceled', {
      error: `canceled: it had not ended by its deadline (Cancel-After), ${job.deadlineAt.toISOString()}`,
    });
  }

  async transitionsOf(jobIds: readonly string[]): Promise<JobTransition[]> {
    return this.orm.em
      .fork()
      .find(JobTransition, { job: { $in: [...jobIds] } }, { orderBy: { at: 'asc', id: 'asc' } });
  }

  /**
   * Stops a job: `canceled` at once (the worker running it is told through the event); a job
   * that has ended already is answered as it is.
   */
  async cancel(principal: Principal, id: string): Promise<Job> {
    authorize(principal, 'write', 'cancel jobs');
    const job = await this.get(principal, id);
    if (isTerminal(job.status)) return job;
    // Not moved: it ended meanwhile, and is answered as it is (and no record is written).
    const audit = this.audit?.statementPart(
      principal,
      { action: 'job.canceled', targetType: 'job', targetId: job.id },
      'upd',
    );
    return (await this.transition(job.id, 'canceled', { audit })) ?? (await this.byId(job.id))!;
  }

  /**
   * Moves a job to `to` if its current state allows it, in one statement: lock the row, check,
   * update, record the transition and NOTIFY (sent only if the change commits). Answers the job
   * as it is now, or null when it did not move: a job that has meanwhile gone elsewhere (say,
   * canceled) is left alone.
   */
  async transition(jobId: string, to: JobStatus, fields: TransitionFields = {}): Promise<Job | null> {
    const sets = setsFor(to, fields);
    const publish = fields.publishOutputs
      ? `, outputs as (update media_assets set status = 'live', created_at = now()
                       where job_id in (select id from upd) and status = 'uploading')`
      : '';
    // Read in the final select (after the event), so that PostgreSQL runs them.
    const extras: string[] = [];
    const events = webhookEventsOf(to, fields);
    const webhooks = events.length ? `, ${enqueueDeliveriesSql('wh', 'upd', '?::text[]')}` : '';
    if (webhooks) extras.push('(select count(*) from wh_go) as messages');
    let retry = '';
    if (to === 'failed' && fields.infrastructure) {
      retry = `, src as (select upd.*, null::uuid as new_id, upd.attempt + 1 as new_attempt, upd.deadline_at as new_deadline
                        from upd where upd.attempt <= upd.max_retries
                        and (upd.deadline_at is null or upd.deadline_at > now())),
               ${queuedCopySql('retry', 'src')}`;
      extras.push('(select count(*) from retry_go) as retried', '(select id from retry_job) as retry_id');
    }
    // The change's audit record, in the same statement (written only if the job moves).
    const audit = fields.audit ? `, audit as (${fields.audit.sql})` : '';
    const rows = await queryRows(
      this.orm.em,
      `with prev as (select id, status from jobs where id = ? for update),
       upd as (
         update jobs j set status = ?, updated_at = now()${sets.sql}
         from prev where j.id = prev.id and prev.status = any(?::text[])
         returning j.*, prev.status as from_status
       ),
       ins as (insert into job_transitions (job_id, from_status, to_status, at)
               select id, from_status, status, updated_at from upd returning id as seq)${audit}${publish}${retry}${webhooks}
       select ${prefixedColumns(this.orm, Job, 'upd', '')}, upd.from_status,
              pg_notify(?, ${jobEventSql('upd', 'ins.seq', 'upd.from_status')})
              ${extras.map((e) => `, ${e}`).join('')}
       from upd, ins`,
      [
        jobId,
        to,
        ...sets.params,
        `{${FROM[to].join(',')}}`,
        ...(fields.audit?.params ?? []),
        ...(webhooks ? [`{${events.join(',')}}`] : []),
        CHANNELS.jobs,
      ],
      true,
    );
    if (rows.length !== 1) return null;
    const [row] = rows;
    // A plain row, not an entity the ORM tracks: hydrating it cost more than the statement here.
    const job = rowReader(this.orm, Job)(row);
    this.lifecycle?.transitioned(job, row.from_status as JobStatus | null);
    // The automatic retry is a copy of this job under another id (see queuedCopySql).
    const retryId = row.retry_id as string | null | undefined;
    if (retryId) this.lifecycle?.created({ ...job, id: retryId }, job.deployment.id);
    return job;
  }

  /**
   * A job and the id of its latest transition (see JobEvent.seq), in one statement: read apart,
   * the two could disagree about a job that moves meanwhile.
   */
  async withLastTransition(id: string): Promise<{ job: Job; seq: number } | null> {
    const em = this.orm.em.fork();
    const [row]: Record<string, unknown>[] = await em.execute(
      `select j.*, (select coalesce(max(t.id), 0) from job_transitions t where t.job_id = j.id)::int as last_seq
       from jobs j where j.id = ?`,
      [id],
    );
    if (!row) return null;
    const { last_seq: seq, ...job } = row;
    return { job: em.map(Job, job), seq: seq as number };
  }

  /** The id of the latest transition of any job. */
  async lastTransitionId(): Promise<number> {
    const [row] = await this.orm.em
      .fork()
      .execute('select coalesce(max(id), 0)::bigint::text as seq from job_transitions');
    return Number(row.seq);
  }

  /**
   * Transitions after `afterSeq` of the given owners' jobs and of the given jobs (of every job
   * when `of` is null), in order, as events without the job's columns (a subscriber that needs
   * them reads the job as it is now).
   */
  async transitionsAfter(
    afterSeq: number,
    of: { owners: readonly string[]; jobIds: readonly string[] } | null,
  ): Promise<JobEvent[]> {
    const rows: Record<string, unknown>[] = await this.orm.em.fork().execute(
      `select t.id::text as seq, t.job_id, t.from_status, t.to_status, t.at, j.owner_type, j.owner_id
       from job_transitions t join jobs j on j.id = t.job_id
       where t.id > ? and (?::boolean or t.job_id = any(?::uuid[]) or j.owner_type || ':' || j.owner_id = any(?::text[]))
       order by t.id`,
      [
        afterSeq,
        of === null,
        `{${of?.jobIds.join(',') ?? ''}}`,
        `{${of?.owners.map((o) => `"${o}"`).join(',') ?? ''}}`,
      ],
    );
    return rows.map((r) => ({
      jobId: r.job_id as string,
      ownerType: r.owner_type as Owner['type'],
      ownerId: r.owner_id as string,
      status: r.to_status as JobStatus,
      from: r.from_status as JobStatus | null,
      at: new Date(r.at as string).toISOString(),
      seq: Number(r.seq),
    }));
  }

  /**
   * Publishes a batch of a running job's lines (CHANNELS.jobLogs), in one statement: the batch is
   * kept for replay while the job's kept output is under STORED_LOG_BYTES, takes its id from the
   * transitions' sequence (`seq`), and a `logs` webhook message is scheduled when one is wanted.
   */
  async publishLines(job: Pick<Job, 'id' | 'ownerType' | 'ownerId'>, lines: LogLine[]): Promise<void> {
    const json = JSON.stringify(lines);
    const bytes = Buffer.byteLength(json);
    const event = JSON.stringify({ jobId: job.id, ownerType: job.ownerType, ownerId: job.ownerId, lines });
    await this.orm.em.fork().execute(
      `with s as (select nextval('job_transitions_id_seq') as seq,
                         coalesce((select total_bytes from job_log_batches where job_id = ? order by id desc limit 1), 0) as kept),
       b as (insert into job_log_batches (id, job_id, lines, total_bytes, at)
             select s.seq, ?, ?::jsonb, s.kept + ?, now() from s where s.kept + ? <= ? returning id),
       w as (${enqueueLogsSql('?')})
       select pg_notify(?, (?::jsonb || jsonb_build_object('seq', s.seq))::text),
              (select count(*) from w), (select count(*) from b)
       from s`,
      [job.id, job.id, json, bytes, bytes, STORED_LOG_BYTES, job.id, CHANNELS.jobLogs, event],
    );
  }

  /**
   * A detached executor has the job (still `starting`, perhaps waiting for resources): its handle
   * is recorded at once, so that a worker taking the job over follows it instead of submitting it.
   */
  async recordSubmission(jobId: string, workerId: string, externalId: string): Promise<void> {
    await this.orm.em
      .fork()
      .execute(`update jobs set external_id = ? where id = ? and worker_id = ? and status = 'starting'`, [
        externalId,
        jobId,
        workerId,
      ]);
  }

  /**
   * Why submitted jobs still wait, in the cluster's words (not a transition). One statement for
   * many jobs: a poll may change the reasons of thousands at once.
   */
  async notePending(reasons: ReadonlyMap<string, string | null>): Promise<void> {
    if (!reasons.size) return;
    await this.orm.em.fork().execute(
      `update jobs j set pending_reason = n.reason
       from jsonb_to_recordset(?::jsonb) as n(id uuid, reason text) where j.id = n.id and j.status = 'starting'`,
      [JSON.stringify([...reasons].map(([id, reason]) => ({ id, reason })))],
    );
  }

  /**
   * The last LOG_TAIL_BYTES of what a job printed, from its published lines, when all of them were
   * kept (null otherwise): current to the last batch, where the stored tail is saved every 5 s.
   */
  async recentLogTail(jobId: string): Promise<string | null> {
    // The batches holding the last LOG_TAIL_BYTES (`total_bytes`: kept so far, that batch included).
    const rows: { line: string; kept: number }[] = await this.orm.em.fork().execute(
      `with last as (select max(total_bytes) as kept from job_log_batches where job_id = ?)
       select x.l->>'line' as line, last.kept
       from last, job_log_batches b, jsonb_array_elements(b.lines) with ordinality as x(l, n)
       where b.job_id = ? and b.total_bytes > last.kept - ?
       order by b.id desc, x.n desc`,
      [jobId, jobId, LOG_TAIL_BYTES + 8000],
    );
    if (!rows.length) return '';
    // Batches are kept up to STORED_LOG_BYTES: past it, the latest lines are not among them.
    if (rows[0].kept + 8000 > STORED_LOG_BYTES) return null;
    const lines: string[] = [];
    let bytes = 0;
    for (const { line } of rows) {
      bytes += Buffer.byteLength(line) + 1;
      if (bytes > LOG_TAIL_BYTES && lines.length) break;
      lines.unshift(line);
    }
    return lines.join('\n');
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

  /** Keeps the stored log tail current while a job runs (not a transition). */
  async saveLogTail(jobId: string, logTail: string): Promise<void> {
    await this.orm.em.fork().nativeUpdate(Job, { id: jobId }, { logTail });
  }
}
