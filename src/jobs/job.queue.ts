/** The graphile-worker task that hands a queued job to an executor. */
export const DISPATCH_TASK = 'dispatch_job';
/** The graphile-worker task that cancels a job still unfinished at its deadline (`Cancel-After`). */
export const DEADLINE_TASK = 'job_deadline';
/**
 * The graphile-worker task that dispatches a chunk of a batch's queued jobs (up to BATCH_CHUNK):
 * submitted together to an executor with `submitMany`, else taken apart into DISPATCH_TASKs.
 */
export const BATCH_DISPATCH_TASK = 'dispatch_batch';
export const BATCH_CHUNK = 1000;
/**
 * graphile-worker's priority of a batch's dispatch tasks: higher numbers run later, and an
 * interactive job's task has the default 0, so a single deployment never waits behind its
 * owner's batch (docs/batches.md, "Dispatch order"). The one place to change when dispatch order
 * learns fair shares.
 */
export const BATCH_PRIORITY = 10;
