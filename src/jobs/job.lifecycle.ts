import type { Logger } from '../common/logger';
import type { Metrics } from '../metrics/metrics';
import type { Job } from './job.entity';
import { isTerminal, type JobStatus } from './job.states';

/**
 * What the process that changes a job says about it: one log line per step of its life and the
 * job metrics. Called by the job and deployment services right after the change committed, so
 * each step is told once, by the process that made it.
 */
export class JobLifecycle {
  constructor(
    private readonly log: Logger,
    private readonly metrics: Metrics | null = null,
  ) {}

  created(job: Job, deploymentId: string): void {
    this.metrics?.jobsCreated.inc();
    this.log.info(
      { jobId: job.id, deploymentId, modelId: job.modelId, owner: `${job.ownerType}:${job.ownerId}` },
      'job created',
    );
  }

  /** Jobs created together (a batch's items, its retries): counted, and told in one line. */
  createdMany(count: number, about: { batchId: string; modelId: string }): void {
    this.metrics?.jobsCreated.inc(count);
    this.log.info({ ...about, jobs: count }, 'jobs created');
  }

  transitioned(job: Job, from: JobStatus | null): void {
    if (job.status === 'running') {
      if (job.queueSeconds !== null) this.metrics?.dispatchLatency.observe(job.queueSeconds);
      this.log.info(
        { jobId: job.id, executor: job.executor, externalId: job.externalId, queueSeconds: job.queueSeconds },
        'job started',
      );
    } else if (isTerminal(job.status)) {
      this.metrics?.jobsEnded.inc({ state: job.status });
      if (job.runSeconds !== null) this.metrics?.runDuration.observe({ state: job.status }, job.runSeconds);
      const ended = job.finishedAt ?? new Date();
      this.log.info(
        {
          jobId: job.id,
          state: job.status,
          from,
          executor: job.executor,
          externalId: job.externalId,
          exitCode: job.exitCode,
          runSeconds: job.runSeconds,
          totalSeconds: (ended.getTime() - job.createdAt.getTime()) / 1000,
          ...(job.error ? { error: job.error } : {}),
        },
        'job ended',
      );
    } else {
      this.log.debug({ jobId: job.id, state: job.status, from, workerId: job.workerId }, 'job moved');
    }
  }
}
