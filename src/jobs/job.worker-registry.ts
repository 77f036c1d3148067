import type { MikroORM } from '@mikro-orm/postgresql';
import { Logger as GraphileLogger } from 'graphile-worker';
import type { Logger } from '../common/logger';

/** A worker process as the registry has it: `stale` once its heartbeat is older than the limit. */
export interface RegisteredWorker {
  id: string;
  host: string;
  pid: number;
  stale: boolean;
}

/**
 * The worker processes on record (`worker_instances`), each with its heartbeat on the database's
 * clock and the ids of its queue runners: the SQL of the runner part's own table.
 */
export class WorkerRegistry {
  constructor(
    private readonly orm: MikroORM,
    private readonly self: { id: string; host: string; pid: number },
  ) {}

  /** Registers or re-registers this worker and its queue runners. */
  async beat(queueWorkers: readonly string[]): Promise<void> {
    await this.orm.em.fork().execute(
      `insert into worker_instances (id, host, pid, started_at, seen_at, queue_workers)
       values (?, ?, ?, now(), now(), ?::text[])
       on conflict (id) do update set seen_at = now(), queue_workers = excluded.queue_workers`,
      [this.self.id, this.self.host, this.self.pid, `{${queueWorkers.join(',')}}`],
    );
  }

  /** Every worker on record, stale when it has not beaten for `staleSeconds`. */
  async workers(staleSeconds: number): Promise<RegisteredWorker[]> {
    return this.orm.em
      .fork()
      .execute(
        `select id, host, pid, seen_at < now() - make_interval(secs => ?) as stale from worker_instances`,
        [staleSeconds],
      );
  }

  /**
   * Removes workers that are gone, and unlocks the queue tasks their graphile-worker runners held
   * (graphile-worker's own force_unlock_workers), in one statement: a task a dead worker took, a
   * job's dispatch waiting for a slot say, runs elsewhere now instead of in 4 hours. Answers the
   * queue runners unlocked.
   */
  async forget(dead: ReadonlySet<string>): Promise<string[]> {
    const [row]: { unlocked: string[] }[] = await this.orm.em.fork().execute(
      `with gone as (delete from worker_instances where id = any(?::uuid[]) returning queue_workers),
       ids as (select coalesce(array_agg(w), '{}') as unlocked from gone, unnest(gone.queue_workers) w)
       select unlocked, graphile_worker.force_unlock_workers(unlocked) from ids`,
      [`{${[...dead].join(',')}}`],
    );
    return row?.unlocked ?? [];
  }

  /** This worker stops: off the record. */
  async remove(): Promise<void> {
    await this.orm.em.fork().execute('delete from worker_instances where id = ?', [this.self.id]);
  }
}

/**
 * A graphile-worker preset whose workers call `register` with their id before they look for their
 * first task (graphile-worker awaits its `startWorker` hook), so no task is locked by an id that
 * is not on record.
 */
export function registeringPreset(register: (workerId: string) => Promise<void>): GraphileConfig.Preset {
  return {
    plugins: [
      {
        name: 'MediaPlatformQueueWorkerRegistry',
        version: '1.0.0',
        worker: { hooks: { startWorker: (_ctx, event) => register(event.worker.workerId) } },
      },
    ],
  };
}

/** graphile-worker's log lines into the service's logger (its own go to the console). */
export function graphileLogger(log: Logger): GraphileLogger {
  return new GraphileLogger(() => (level, message, meta) => {
    const pinoLevel = level === 'error' ? 'error' : level === 'warning' ? 'warn' : 'debug';
    log[pinoLevel]({ ...meta, component: 'graphile-worker' }, message);
  });
}
