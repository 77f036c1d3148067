import type { Logger } from '../common/logger';
import type { Executor } from '../executors/executor.port';
import type { JobService } from './job.service';
import type { FollowedRow } from './job.store';
import type { WorkerRegistry } from './job.worker-registry';

/** A worker whose heartbeat (database time) is older than this is gone; its jobs are reconciled. */
export const STALE_WORKER_SECONDS = 30;

/** What reconciliation needs of the worker it runs in (JobRunner). */
export interface ReconcilingWorker {
  id: string;
  host: string;
  /** This worker follows the job already. */
  follows(jobId: string): boolean;
  stopping(): boolean;
  /** Follows from now on a cluster job of a worker that is gone (or stops it), while there is room. */
  takeOver(row: FollowedRow): Promise<void>;
}

/**
 * The reconciliation of the worker role (JobRunner): finds the workers that are gone and what
 * becomes of the jobs they were following (docs/jobs.md, "Reconciliation").
 */
export class JobReconciler {
  private reconciling = false;
  /** Jobs of another executor kind whose worker is gone, already reported. */
  private readonly foreign = new Set<string>();

  constructor(
    private readonly registry: WorkerRegistry,
    private readonly jobs: JobService,
    private readonly executor: Executor,
    private readonly log: Logger,
    private readonly self: ReconcilingWorker,
  ) {}

  /**
   * Jobs left by a worker that is gone (no heartbeat for 30 s on the database's clock, or an
   * earlier process on this host that no longer exists), and jobs of this worker it no longer
   * follows. A cluster's job is taken over: followed on from where it is, its log continued. A
   * local job cannot be followed by another process: it fails with a clear error, and its
   * leftover processes on this host are stopped. A job canceled while its worker was gone is
   * stopped on the executor.
   */
  async reconcile(): Promise<void> {
    if (this.reconciling) return;
    this.reconciling = true;
    try {
      await this.reconcileOnce();
    } finally {
      this.reconciling = false;
    }
  }

  private async reconcileOnce(): Promise<void> {
    const workers = await this.registry.workers(STALE_WORKER_SECONDS);
    const dead = new Set(
      workers
        .filter(
          (w) => w.id !== this.self.id && (w.stale || (w.host === this.self.host && !processAlive(w.pid))),
        )
        .map((w) => w.id),
    );
    const others = workers.filter((w) => w.id !== this.self.id && !dead.has(w.id)).map((w) => w.id);
    // Jobs followed by live others are theirs; this worker's own come back, to be checked here.
    const rows = await this.jobs.followedExcept(others);
    for (const row of rows) {
      if (row.worker_id === this.self.id && this.self.follows(row.id)) continue;
      if (this.self.stopping()) break;
      if (this.executor.detached && row.executor === this.executor.name) await this.self.takeOver(row);
      else if (row.executor === 'local' || row.executor === this.executor.name)
        await this.failLocal(row, workers);
      else if (!this.foreign.has(row.id)) {
        this.foreign.add(row.id);
        this.log.warn(
          { jobId: row.id, executor: row.executor },
          'a job of a worker that is gone runs on another executor than this worker: left for a worker of its executor',
        );
      }
    }
    if (dead.size) await this.forget(dead);
  }

  /** Removes workers that are gone, unlocking the queue tasks they held (WorkerRegistry.forget). */
  private async forget(dead: Set<string>): Promise<void> {
    const unlocked = await this.registry.forget(dead);
    if (unlocked.length)
      this.log.info(
        { workers: [...dead], queueWorkers: unlocked },
        'unlocked the queue tasks of workers that are gone',
      );
  }

  /** A local job of a worker that is gone: its output cannot be followed, so it fails. */
  private async failLocal(row: FollowedRow, workers: { id: string; host: string }[]): Promise<void> {
    const worker = workers.find((w) => w.id === row.worker_id);
    const here = !worker || worker.host === this.self.host;
    // A job left `starting` may have a process whose id was never recorded: looked for too.
    const stopped = here ? await this.executor.stopOrphan(row.id, row.external_id) : false;
    if (row.status === 'canceled') {
      await this.jobs.releaseWorker(row.id, row.worker_id!);
      return;
    }
    // Its worker died, not its program: an infrastructure failure (retried per max_retries).
    const moved = await this.jobs.transition(row.id, 'failed', {
      infrastructure: true,
      error:
        `the worker running this job stopped (crash or restart) before it finished` +
        (stopped ? '; its leftover processes were stopped' : ''),
    });
    if (moved)
      this.log.warn(
        { jobId: row.id, worker: row.worker_id, infrastructure: true },
        'reconciled a job of a lost worker',
      );
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
