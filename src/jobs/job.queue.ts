/** The graphile-worker task that hands a queued job to an executor. */
export const DISPATCH_TASK = 'dispatch_job';
/** The graphile-worker task that cancels a job still unfinished at its deadline (`Cancel-After`). */
export const DEADLINE_TASK = 'job_deadline';
