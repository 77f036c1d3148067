import { run, type Runner, type Task } from 'graphile-worker';
import type { Logger } from '../common/logger';
import { boundedPool } from '../db/pg-bounds';
import { graphileLogger, registeringPreset } from '../jobs/job.worker-registry';

export type TaskList = Record<string, (payload: unknown) => Promise<void>>;

export interface TaskRunnerOptions {
  databaseUrl: string;
  concurrency: number;
  /** DATABASE_QUERY_TIMEOUT_MS, for the runner's own connections. */
  queryTimeoutMs?: number;
  /** Records each graphile-worker id with this process's worker (JobRunner.registerQueueWorker). */
  registerWorker: (workerId: string) => Promise<void>;
}

/**
 * The worker role's short tasks (webhook deliveries, job deadlines) on graphile-worker, in a
 * runner of their own: a job's dispatch task holds its runner's slot for the job's whole run, and
 * a delivery must not wait for a job to end. Tasks are enqueued in SQL by any role (they are rows
 * of the same PostgreSQL queue); each runner takes only the task names it knows.
 */
export class TaskRunner {
  private runner: Runner | null = null;
  private pool: ReturnType<typeof boundedPool> | null = null;

  constructor(
    private readonly tasks: TaskList,
    private readonly log: Logger,
    private readonly opts: TaskRunnerOptions,
  ) {}

  async start(): Promise<void> {
    const taskList: Record<string, Task> = {};
    for (const [name, handler] of Object.entries(this.tasks)) taskList[name] = (payload) => handler(payload);
    this.pool = boundedPool({
      connectionString: this.opts.databaseUrl,
      // A task holds a connection only for its statements, never while it waits on a receiver.
      max: Math.min(4, this.opts.concurrency + 1),
      timeoutMs: this.opts.queryTimeoutMs ?? 0,
      applicationName: 'media-platform-tasks',
    });
    this.runner = await run({
      pgPool: this.pool,
      concurrency: this.opts.concurrency,
      noHandleSignals: true,
      // Tasks due later (retries, deadlines) are found by polling, each idle slot once a second;
      // new ones arrive by LISTEN at once.
      pollInterval: 1000,
      logger: graphileLogger(this.log),
      preset: registeringPreset(this.opts.registerWorker),
      taskList,
    });
  }

  async stop(): Promise<void> {
    await this.runner?.stop();
    this.runner = null;
    await this.pool?.end();
    this.pool = null;
  }
}
