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
