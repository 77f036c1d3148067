import type { Sql, StatementPart } from '../db/sql';
import type { WebhookEvent } from './job.webhook-events';

/**
 * What other modules add to the job lifecycle's statements (docs/architecture.md, "The job
 * lifecycle"): each part is composed into the statement that makes the change, so it commits if
 * and only if the change does, crash or not. Implemented by the modules that own the tables the
 * parts write (webhooks, models) and wired in server/services.ts; the job store composes them.
 *
 * A part reads what the statement made from the CTE it is given (rows with the columns of
 * `jobs`, one per job: a set, so a statement creating many jobs needs no other part), and names
 * its own CTEs with its module's prefix (`wh_`, `model_`), so that parts never collide.
 */
export interface JobStatementParts {
  /** Parts of the statement creating deployments with their first jobs (`jobs`): a model's run count. */
  readonly created: readonly ((made: { jobs: string }) => StatementPart)[];
  /**
   * Part of a transition's statement: the webhook messages of `events` about the jobs of `jobs`
   * (each job's deployment says whether its webhook hears them).
   */
  readonly events: (made: { jobs: string; events: readonly WebhookEvent[] }) => StatementPart;
  /** Part of the statement publishing a batch of lines of the job `jobId`: the `logs` message. */
  readonly lines: (jobId: Sql) => StatementPart;
}
