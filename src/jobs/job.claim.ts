import type { Job } from './job.entity';

/**
 * A slot of a worker in this process, held for a job about to be created here: the creating
 * statement claims the job for that worker (`starting`, its `worker_id`) instead of queueing it,
 * which saves the queue's round trips and the claim's own statement on the way to `running`.
 */
export interface JobReservation {
  /** The worker the job is claimed for. */
  readonly workerId: string;
  /** The creating statement committed the job claimed: the worker runs it from here. */
  follow(job: Job): void;
  /** The job was not created (or not claimed): the slot is free again. */
  release(): void;
}

/** A worker that may take jobs created in its own process (JobRunner). */
export interface LocalWorker {
  /** A slot for the job `jobId`, or null when none is free (the job then goes to the queue). */
  reserve(jobId: string): JobReservation | null;
}

/**
 * Where the jobs created in this process find its worker's free slots: made in
 * server/services.ts and given to both the creating service and the worker, so neither holds
 * the other. A worker serves from its start to its stop; without one, every job is queued.
 */
export class LocalClaims {
  private worker: LocalWorker | null = null;

  /** `worker` takes jobs created here from now on, until the returned function is called. */
  serve(worker: LocalWorker): () => void {
    this.worker = worker;
    return () => {
      if (this.worker === worker) this.worker = null;
    };
  }

  /** A slot for the job `jobId` with this process's worker, or null (the job is queued). */
  reserve(jobId: string): JobReservation | null {
    return this.worker?.reserve(jobId) ?? null;
  }
}
