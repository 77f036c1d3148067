import type { MikroORM } from '@mikro-orm/postgresql';
import type { Owner } from '../common/principal';
import type { Page, PageArgs } from '../common/pagination';
import { prefixedColumns, readByIds, rowReader } from '../db/rows';
import { sqlPage, type SqlCondition, type SqlLookup } from '../db/sql-page';
import { Model } from '../models/model.entity';
import { Deployment } from './deployment.entity';
import { Job, JobTransition } from './job.entity';
import type { JobStatus } from './job.states';

/** A job of a list, with its model when the list was asked for it. */
export type JobRow = Job & { model?: Model | null };

/** Which entity properties a list reads (see JobQueries.list). */
export interface JobListRead {
  job: Iterable<string> | null;
  deployment?: Iterable<string> | null;
  model?: Iterable<string> | null;
}

/** What the list is narrowed to (checked by JobService). */
export interface JobListFilter {
  status?: JobStatus | null;
  modelId?: string | null;
  /** A batch's jobs (its owner checked by the batches module). */
  batchId?: string | null;
}

/** The reads of the job lifecycle's aggregate (its writes are in JobStore). */
export class JobQueries {
  constructor(private readonly orm: MikroORM) {}

  /**
   * A page of the owner's jobs in one statement. `read` names the entity properties wanted of the
   * job and of the deployment and model to join (null: all of them; a nested one left out: not
   * joined); the properties of columns not read are left undefined.
   */
  async list(owner: Owner, filter: JobListFilter, args: PageArgs, read: JobListRead): Promise<Page<JobRow>> {
    const where: SqlCondition[] = [
      ['j.owner_type = ?', owner.type],
      ['j.owner_id = ?', owner.id],
    ];
    // Status and model each have an index in the list's order (owner, status or model, created_at,
    // id): the first given leads the scan, and the other, with both, is checked within the scan
    // budget (docs/architecture.md, "Lists").
    const checks: SqlCondition[] = [];
    if (filter.status) where.push(['j.status = ?', filter.status]);
    // A batch's jobs come by its own index (batch_id, status, created_at, id): few rows.
    if (filter.batchId) where.push(['j.batch_id = ?', filter.batchId]);
    if (filter.modelId)
      (filter.status || filter.batchId ? checks : where).push([
        'j.model_id = ?',
        filter.modelId.toLowerCase(),
      ]);
    // Plain rows in one statement: hydrating 50 jobs through the ORM cost more than the query,
    // and the deployment and model a query asks for come in the same statement, joined to the
    // page's jobs only. Only the columns asked for are read: decoding unused ones (a model's
    // arguments) was most of the cost.
    const job = rowReader(this.orm, Job);
    const deployment = rowReader(this.orm, Deployment, 'd.');
    const model = rowReader(this.orm, Model, 'm.');
    const keys = ['id', 'createdAt', 'status', 'deployment', 'modelId'];
    const select = [prefixedColumns(this.orm, Job, 'j', '', read.job && [...keys, ...read.job])];
    const join: SqlLookup[] = [];
    if (read.deployment !== undefined) {
      select.push(
        prefixedColumns(this.orm, Deployment, 'd', 'd.', read.deployment && ['id', ...read.deployment]),
      );
      join.push({ table: 'deployments', as: 'd', on: 'd.id = j.deployment_id' });
    }
    if (read.model !== undefined) {
      select.push(prefixedColumns(this.orm, Model, 'm', 'm.', read.model && ['id', ...read.model]));
      join.push({ table: 'models', as: 'm', on: 'm.id = j.model_id', optional: true });
    }
    return sqlPage(
      this.orm.em,
      { from: 'jobs j', select: select.join(', '), alias: 'j', join },
      { where, filter: checks },
      args,
      (row) => {
        const j: JobRow = job(row);
        if (read.deployment !== undefined) j.deployment = deployment(row);
        if (read.model !== undefined) j.model = row['m.id'] === null ? null : model(row);
        return j;
      },
    );
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

  /** Transitions after `afterSeq` of the given owners' jobs and of the given jobs (of all: `of` null). */
  async transitionsAfter(
    afterSeq: number,
    of: { owners: readonly string[]; jobIds: readonly string[] } | null,
  ): Promise<Record<string, unknown>[]> {
    return this.orm.em.fork().execute(
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
  }

  /** The automatic retry queued when this job failed, if any. */
  async automaticRetryOf(jobId: string): Promise<string | null> {
    const [row] = await this.orm.em
      .fork()
      .execute('select id from jobs where retry_of = ? and attempt > 1 limit 1', [jobId]);
    return (row?.id as string | undefined) ?? null;
  }

  /** The lines of the batches holding a job's last `bytes` (newest first), with what was kept of it. */
  async lastLines(jobId: string, bytes: number): Promise<{ line: string; kept: number }[]> {
    // `total_bytes`: kept so far, that batch included.
    return this.orm.em.fork().execute(
      `with last as (select max(total_bytes) as kept from job_log_batches where job_id = ?)
       select x.l->>'line' as line, last.kept
       from last, job_log_batches b, jsonb_array_elements(b.lines) with ordinality as x(l, n)
       where b.job_id = ? and b.total_bytes > last.kept - ?
       order by b.id desc, x.n desc`,
      [jobId, jobId, bytes],
    );
  }

  /** Any job by id. */
  async byId(id: string): Promise<Job | null> {
    return this.orm.em.fork().findOne(Job, { id });
  }

  /** The jobs of deployments, newest first (a deployment has more than one once retried). */
  async byDeploymentIds(ids: readonly string[]): Promise<Job[]> {
    return this.orm.em
      .fork()
      .find(Job, { deployment: { $in: [...ids] } }, { orderBy: { createdAt: 'desc', id: 'desc' } });
  }

  /** The first job of a deployment. */
  async firstJobOf(deploymentId: string): Promise<Job> {
    return this.orm.em
      .fork()
      .findOneOrFail(Job, { deployment: deploymentId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  }

  async transitionsOf(jobIds: readonly string[]): Promise<JobTransition[]> {
    return this.orm.em
      .fork()
      .find(JobTransition, { job: { $in: [...jobIds] } }, { orderBy: { at: 'asc', id: 'asc' } });
  }

  /** A page of the owner's deployments, as plain read-only rows, through their owner index. */
  async deploymentPage(owner: Owner, args: PageArgs): Promise<Page<Deployment>> {
    return sqlPage(
      this.orm.em,
      'deployments',
      [
        ['owner_type = ?', owner.type],
        ['owner_id = ?', owner.id],
      ],
      args,
      rowReader(this.orm, Deployment),
    );
  }

  async deploymentById(id: string): Promise<Deployment | null> {
    return this.orm.em.fork().findOne(Deployment, { id });
  }

  /** Deployments by id, as plain read-only rows (the loader of every job list's `deployment`). */
  async deploymentsByIds(ids: readonly string[]): Promise<Deployment[]> {
    return readByIds(this.orm, Deployment, ids);
  }
}
