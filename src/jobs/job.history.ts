import type { MikroORM } from '@mikro-orm/postgresql';
import type { Owner } from '../common/principal';
import type { LogLine } from './job.log';
import type { JobStatus } from './job.states';

/** One recorded event of a job: a transition, or a batch of the lines it printed. */
export type RecordedEvent =
  | { kind: 'transition'; seq: number; jobId: string; status: JobStatus; from: JobStatus | null; at: string }
  | { kind: 'log'; seq: number; jobId: string; lines: LogLine[] };

/** Whose events: one job, or every job of an owner. */
export type EventScope = { jobId: string } | { owner: Owner };

/**
 * The recorded events of jobs in the order they happened: transitions and kept log batches share
 * one sequence (`job_transitions_id_seq`), so an id says where a reader is in both.
 */
export class JobHistory {
  constructor(private readonly orm: MikroORM) {}

  /** Events with an id of at least `from`, in order, at most `limit`. */
  async from(scope: EventScope, from: number, limit: number): Promise<RecordedEvent[]> {
    const [where, params] =
      'jobId' in scope
        ? ['e.job_id = ?', [scope.jobId]]
        : ['j.owner_type = ? and j.owner_id = ?', [scope.owner.type, scope.owner.id]];
    const join = 'jobId' in scope ? '' : 'join jobs j on j.id = e.job_id';
    const rows: {
      id: string;
      kind: 'transition' | 'log';
      job_id: string;
      from_status: JobStatus | null;
      to_status: JobStatus | null;
      at: Date;
      lines: LogLine[] | null;
    }[] = await this.orm.em.fork().execute(
      `select * from (
         (select e.id, 'transition' as kind, e.job_id, e.from_status, e.to_status, e.at, null::jsonb as lines
          from job_transitions e ${join} where ${where} and e.id >= ? order by e.id limit ?)
         union all
         (select e.id, 'log' as kind, e.job_id, null, null, e.at, e.lines
          from job_log_batches e ${join} where ${where} and e.id >= ? order by e.id limit ?)
       ) events order by id limit ?`,
      [...params, from, limit, ...params, from, limit, limit],
    );
    return rows.map((r) =>
      r.kind === 'transition'
        ? {
            kind: 'transition',
            seq: Number(r.id),
            jobId: r.job_id,
            status: r.to_status!,
            from: r.from_status,
            at: new Date(r.at).toISOString(),
          }
        : { kind: 'log', seq: Number(r.id), jobId: r.job_id, lines: r.lines! },
    );
  }
}
