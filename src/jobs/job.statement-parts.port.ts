import type { Principal } from '../common/principal';
import type { Sql, StatementPart } from '../db/sql';
import type { WebhookEvent } from './job.webhook-events';

/**
 * What other modules add to the job lifecycle's statements (docs/architecture.md, "The job
 * lifecycle"): each part is composed into the statement that makes the change, so it commits if
 * and only if the change does, crash or not. Implemented by the modules that own the tables the
 * parts write (webhooks, models, teams) and wired in server/services.ts; the job store composes them.
 *
 * A part reads what the statement made from the CTE it is given (rows with the columns of
 * `jobs`, one per job: a set, so a statement creating many jobs needs no other part), and names
 * its own CTEs with its module's prefix (`wh_`, `model_`, `team_`), so that parts never collide.
 */
export interface JobStatementParts {
  /** Parts of the statement creating deployments with their first jobs (`jobs`): a model's run count. */
  readonly created: readonly ((made: { jobs: string }) => StatementPart)[];
  /**
   * Part of a transition's statement: the webhook messages of `events` about the jobs of `jobs`
   * (each job's deployment says whether its webhook hears them).
   */
  readonly events: (made: { jobs: string; events: readonly WebhookEvent[] }) => StatementPart;
  /**
   * Part of a transition's statement that ends jobs (`succeeded`, `failed`, `canceled`): billing's
   * spend rollup of the rows of `jobs` (their cost per owner and day) and the budget thresholds
   * their cost crosses (docs/governance.md).
   */
  readonly ended: (made: { jobs: string }) => StatementPart;
  /** Part of the statement publishing a batch of lines of the job `jobId`: the `logs` message. */
  readonly lines: (jobId: Sql) => StatementPart;
  /**
   * The record of what a caller did (a team's audit log), in the statement that does it: one
   * record per row of `rows.from` (none when the change touched no row), its target id
   * `rows.targetSql` (an expression over them) or the action's; null when nothing is recorded.
   */
  readonly acted: (
    caller: Principal,
    action: JobAction,
    rows: { from: string; targetSql?: string },
  ) => StatementPart | null;
}

/** What a caller did to a deployment, a job or a batch (`deployment.created`, `job.canceled`, ...; docs/teams.md). */
export interface JobAction {
  action: string;
  targetType: 'deployment' | 'job' | 'batch';
  targetId?: string;
  details?: Record<string, unknown>;
}

/** A change made by a caller, recorded as such (JobStatementParts.acted). */
export interface Acting {
  caller: Principal;
  action: JobAction;
}
