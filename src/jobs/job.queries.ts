import type { MikroORM } from '@mikro-orm/postgresql';
import type { Owner } from '../common/principal';
import { AppError } from '../common/errors';
import { isUuid } from '../common/ids';
import { LIST_TIMEOUT_MS, pageSize, type Page, type PageArgs } from '../common/pagination';
import { prefixedColumns, queryRows, readByIds, rowReader } from '../db/rows';
import { lookupsSql, sqlPage, type SqlCondition, type SqlLookup } from '../db/sql-page';
import { Model } from '../models/model.entity';
import { Deployment } from './deployment.entity';
import { Job, JobTransition } from './job.entity';
import type { JobStatus } from './job.states';

/** A job of a list, with its model when the list was asked for it, and its cursor in a cost order. */
export type JobRow = Job & { model?: Model | null; cursor?: string };

/**
 * The jobs list by cost: ended jobs only (their cost is final), most expensive first (`desc`) or
 * cheapest first, priced with `prices` (machinePricesJson: the price list as jsonb).
 */
export interface JobCostOrder {
  direction: 'desc' | 'asc';
  prices: string;
}

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
  async list(
    owner: Owner,
    filter: JobListFilter,
    args: PageArgs,
    read: JobListRead,
    byCost: JobCostOrder | null = null,
  ): Promise<Page<JobRow>> {
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
    const readRow = (row: Record<string, unknown>) => {
      const j: JobRow = job(row);
      if (read.deployment !== undefined) j.deployment = deployment(row);
      if (read.model !== undefined) j.model = row['m.id'] === null ? null : model(row);
      return j;
    };
    if (byCost) return this.costPage(owner, byCost, args, select.join(', '), join, readRow);
    return sqlPage(
      this.orm.em,
      { from: 'jobs j', select: select.join(', '), alias: 'j', join },
      { where, filter: checks },
      args,
      readRow,
    );
  }

  /**
   * A page of the owner's ended jobs by cost, in one statement (docs/governance.md, "Sorting by
   * cost"). Cost is machine_micros x the price of the job's machine type, which no one index
   * orders across types; jobs_owner_cost_index orders each type's jobs by machine_micros, which
   * within a type is the cost's order. So: the owner's machine types by a skip scan of that
   * index (one step per type), for each type at most `limit + 1` jobs after the cursor read in
   * index order, then merged by cost. The order is (cost, machine_micros, id), in `direction`;
   * machine_micros breaks ties only between types of price 0, where cost says nothing.
   *
   * The cursor holds the last row's (exact cost, machine_micros, id); each type turns it into a
   * bound on its own index, `(machine_micros, id) < (bu, bi)` (`>` ascending), exact in numeric:
   * with price p > 0, fl = div(cost, p) is the largest machine time not costing more than the
   * cursor, and whether fl x p equals the cost decides if fl's rows tie with it.
   */
  private async costPage(
    owner: Owner,
    order: JobCostOrder,
    args: PageArgs,
    select: string,
    join: SqlLookup[],
    read: (row: Record<string, unknown>) => JobRow,
  ): Promise<Page<JobRow>> {
    const limit = pageSize(args.first);
    const after = args.after ? decodeCostCursor(args.after) : null;
    const desc = order.direction === 'desc';
    const [cmp, dir] = desc ? ['<', 'desc'] : ['>', 'asc'];
    // An id no row passes at a bound's machine time (ids are random UUIDs, never these).
    const edge = desc
      ? "'00000000-0000-0000-0000-000000000000'::uuid"
      : "'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid";
    const max = '9223372036854775807';
    const exactTie = 'k.fl * t.p = k.c';
    // Per type: the bound of the rows after the cursor (see above). Price 0: every row costs 0,
    // so all come after a cursor of higher cost (desc; none asc), and at cost 0 the order is
    // (machine_micros, id) itself.
    const bu = desc
      ? `case when k.c is null then ${max} when t.p = 0 then case when k.c > 0 then ${max} else k.u end
              when ${exactTie} and k.fl >= k.u then k.fl else k.fl + 1 end`
      : `case when k.c is null then -1 when t.p = 0 then case when k.c > 0 then ${max} else k.u end
              when ${exactTie} and k.fl > k.u then k.fl - 1 else k.fl end`;
    const bi = `case when k.c is not null and (t.p = 0 and k.c = 0 or t.p > 0 and ${exactTie} and k.fl = k.u)
                     then k.i else ${edge} end`;
    const owned = 'j.owner_type = ? and j.owner_id = ? and j.machine_micros is not null';
    const statement = `
      with recursive types as (
        (select j.machine_type as t from jobs j where ${owned} order by j.machine_type limit 1)
        union all
        select (select j.machine_type from jobs j where ${owned} and j.machine_type > types.t
                order by j.machine_type limit 1)
        from types where types.t is not null
      ),
      priced as (
        select types.t, coalesce(p.prices ->> types.t, p.prices ->> 'default')::numeric as p
        from types, (select ?::jsonb as prices) p where types.t is not null
      ),
      bounds as (
        select t.t, t.p, least(${bu}, ${max})::bigint as bu, ${bi} as bi
        from priced t, lateral (
          select c.c, c.u, c.i, case when t.p > 0 then div(c.c, t.p) end as fl
          from (select ?::numeric as c, ?::numeric as u, ?::uuid as i) c
        ) k
      )
      select ${select}, j.cost_key, j.cost_units from (
        select j.*, (j.machine_micros * b.p)::text as cost_key, j.machine_micros::text as cost_units,
               j.machine_micros * b.p as cost_order
        from bounds b cross join lateral (
          select * from jobs j
          where ${owned} and j.machine_type = b.t and (j.machine_micros, j.id) ${cmp} (b.bu, b.bi)
          order by j.machine_micros ${dir}, j.id ${dir} limit ?
        ) j
        order by cost_order ${dir}, j.machine_micros ${dir}, j.id ${dir} limit ?
      ) j ${lookupsSql(join)}
      order by j.cost_order ${dir}, j.machine_micros ${dir}, j.id ${dir}`;
    const o = [owner.type, owner.id];
    const rows = await queryRows(
      this.orm.em,
      statement,
      [
        ...o,
        ...o,
        order.prices,
        after?.cost ?? null,
        after?.units ?? null,
        after?.id ?? null,
        ...o,
        limit + 1,
        limit + 1,
      ],
      false,
      LIST_TIMEOUT_MS,
    );
    const items = rows.slice(0, limit).map((row) =>
      Object.assign(read(row), {
        cursor: encodeCostCursor({
          cost: String(row.cost_key),
          units: String(row.cost_units),
          id: String(row.id),
        }),
      }),
    );
    return {
      items,
      hasNextPage: rows.length > limit,
      endCursor: items.length ? items[items.length - 1].cursor : null,
    };
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

/** Where a page by cost stopped: the last job's exact cost (decimal text), machine_micros and id. */
interface CostCursor {
  cost: string;
  units: string;
  id: string;
}

const COST_CURSOR = 'cost';

function encodeCostCursor(c: CostCursor): string {
  return Buffer.from(JSON.stringify([COST_CURSOR, c.cost, c.units, c.id])).toString('base64url');
}

function decodeCostCursor(cursor: string): CostCursor {
  try {
    const [kind, cost, units, id] = JSON.parse(
      Buffer.from(cursor, 'base64url').toString('utf8'),
    ) as unknown[];
    if (
      kind !== COST_CURSOR ||
      typeof cost !== 'string' ||
      !/^\d{1,40}(\.\d{1,40})?$/.test(cost) ||
      typeof units !== 'string' ||
      !/^\d{1,19}$/.test(units) ||
      !isUuid(id)
    )
      throw new Error('bad cursor');
    return { cost, units, id: String(id) };
  } catch {
    throw AppError.validation({ cursor: 'is not a cursor this service issued for this order' });
  }
}
