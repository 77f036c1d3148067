import type { Request } from 'express';
import { AppError } from '../../src/common/errors';
import {
  CancelJobDocument,
  CreateDeploymentDocument,
  GetDeploymentDocument,
  GetJobDocument,
  ListDeploymentsDocument,
  ListJobsDocument,
  RetryJobDocument,
  type JobOrder,
  type JobStatus,
  type Priority,
  type WebhookEvent,
  type RestDeploymentFragment,
  type RestJobFragment,
} from '../generated/graphql';
import { body, listResponse, optionalString, pageVariables, queryString } from '../../src/http/http.rest';
import { idempotency, type QueryParameter } from '../../src/http/openapi/openapi.docs';
import { route } from '../route';
import { MAX_WAIT_SECONDS } from '../../src/jobs/job.wait';
import { WEBHOOK_EVENTS } from '../../src/jobs/job.webhook-events';
import { PRIORITIES } from '../../src/jobs/deployment.entity';
import { JOB_ORDERS } from '../../src/jobs/job.service';
import {
  anything,
  arrayOf,
  boolean,
  decimal,
  enumOf,
  integer,
  isoTime,
  mapOf,
  nullable,
  number,
  object,
  requestBody,
  string,
  url,
  uuid,
} from '../../src/http/openapi/json-schema';

export const STATUSES = ['queued', 'starting', 'running', 'succeeded', 'failed', 'canceled'];

/** An argument value: a number, a string, or a media id for a file argument. */
export const argValue = { type: ['string', 'number'] };

export const jobSchema = object({
  id: uuid,
  deployment_id: uuid,
  model_id: uuid,
  model_version_id: { ...nullable(uuid), description: 'the model version it runs (docs/models.md)' },
  secrets: {
    ...arrayOf(string),
    description: "the names of the owner's secrets it gets, never their values",
  },
  status: enumOf(STATUSES),
  executor: string,
  external_id: nullable(string),
  nodes: { ...arrayOf(string), description: 'the hosts the job runs or ran on (Slurm, Kubernetes)' },
  pending_reason: {
    ...nullable(string),
    description:
      "why it waits: queued, the quota that holds it (`QuotaExceeded: 4 of 4 gpu-a100 in use`); starting on a cluster, in the scheduler's words",
  },
  priority: enumOf(PRIORITIES),
  queue_position: {
    ...nullable(integer),
    description: "queued: its place in its owner's queue (1: next); null otherwise (docs/governance.md)",
  },
  exit_code: nullable(integer),
  error: nullable(string),
  attempt: { ...integer, minimum: 1, description: '1, then 2 for the first automatic retry, ...' },
  max_retries: { ...integer, description: "the model's automatic retries on infrastructure failures" },
  retry_of: { ...nullable(uuid), description: 'the job this one runs again' },
  infrastructure_failure: {
    ...boolean,
    description: 'failed because of the infrastructure, not the program',
  },
  deadline_at: { ...nullable(isoTime), description: 'canceled if not ended by then (`Cancel-After`)' },
  created_at: isoTime,
  started_at: nullable(isoTime),
  finished_at: nullable(isoTime),
  queue_seconds: nullable(number),
  run_seconds: nullable(number),
  cost: {
    ...object({ amount: decimal, currency: string, final: boolean }),
    description: 'from the price list; `final: false` while the job may still run (docs/governance.md)',
  },
  output: object({
    files: arrayOf(object({ id: uuid, name: string, url, content_type: string, size: integer })),
    result: { ...anything, description: 'what the program printed as its result (docs/jobs.md)' },
  }),
  result_urls: arrayOf(url),
  log_tail: string,
});

const deploymentSchema = object({
  id: uuid,
  name: string,
  model_id: uuid,
  args: mapOf(argValue),
  source_asset_id: nullable(uuid),
  target_asset_id: uuid,
  webhook: nullable(url),
  webhook_events_filter: arrayOf(enumOf(WEBHOOK_EVENTS)),
  priority: enumOf(PRIORITIES),
  created_at: isoTime,
  job: jobSchema,
});

/** `Cancel-After` on the routes that make a job. */
const cancelAfterHeader: Record<string, QueryParameter> = {
  'Cancel-After': {
    description: 'cancel the job if it has not ended by then, queue time included: `30s`, `5m`, `1h30m`',
    schema: { type: 'string', maxLength: 64 },
  },
};

/** A job as REST shows it (the spec leaves the shape open; see docs/jobs.md). */
export const jobJson = (j: RestJobFragment) => ({
  id: j.id,
  deployment_id: j.deploymentId,
  model_id: j.modelId,
  model_version_id: j.modelVersionId,
  secrets: j.secrets,
  status: j.status.toLowerCase(),
  executor: j.executor,
  external_id: j.externalId,
  nodes: j.nodes,
  pending_reason: j.pendingReason,
  priority: j.priority.toLowerCase(),
  queue_position: j.queuePosition,
  exit_code: j.exitCode,
  error: j.error,
  attempt: j.attempt,
  max_retries: j.maxRetries,
  retry_of: j.retryOfId,
  infrastructure_failure: j.infrastructureFailure,
  deadline_at: j.deadlineAt,
  created_at: j.createdAt,
  started_at: j.startedAt,
  finished_at: j.finishedAt,
  queue_seconds: j.queueSeconds,
  run_seconds: j.runSeconds,
  cost: j.cost,
  output: {
    files: j.outputs.map((o) => ({
      id: o.id,
      name: o.imageName,
      url: o.url,
      content_type: o.contentType,
      size: o.size,
    })),
    result: j.result,
  },
  result_urls: j.resultUrls,
  log_tail: j.logTail,
});

const deploymentJson = (d: RestDeploymentFragment) => ({
  id: d.id,
  name: d.name,
  model_id: d.modelId,
  args: d.args,
  source_asset_id: d.sourceAssetId,
  target_asset_id: d.targetAssetId,
  webhook: d.webhook,
  webhook_events_filter: d.webhookEventsFilter.map((e) => e.toLowerCase()),
  priority: d.priority.toLowerCase(),
  created_at: d.createdAt,
  job: jobJson(d.job),
});

/**
 * `Prefer: wait` (60 s) or `Prefer: wait=N` (RFC 7240), at most 60 s; undefined when absent,
 * malformed or 0: a preference the server cannot honour is ignored, as the RFC says.
 */
export function preferredWait(req: Request): number | undefined {
  for (const token of (req.get('prefer') ?? '').split(',')) {
    const m = /^\s*wait\s*(?:=\s*"?(\d{1,6})"?)?\s*(?:;.*)?$/i.exec(token);
    if (!m) continue;
    const seconds = m[1] === undefined ? MAX_WAIT_SECONDS : Math.min(Number(m[1]), MAX_WAIT_SECONDS);
    return seconds || undefined;
  }
  return undefined;
}

/** `webhook_events_filter` as the GraphQL enum; named in VALIDATION_FAILED as GraphQL names it. */
export function webhookEvents(value: unknown): WebhookEvent[] | undefined {
  if (value === undefined || value === null) return undefined;
  const events: readonly unknown[] = WEBHOOK_EVENTS;
  if (!Array.isArray(value) || value.some((e) => !events.includes(e)))
    throw AppError.validation({ webhookEventsFilter: `must be a list of ${WEBHOOK_EVENTS.join(', ')}` });
  return value.map((e: string) => e.toUpperCase() as WebhookEvent);
}

/** `priority` as the GraphQL enum. */
function priority(value: unknown): Priority | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || !(PRIORITIES as readonly string[]).includes(value))
    throw AppError.validation({ priority: `must be one of ${PRIORITIES.join(', ')}` });
  return value.toUpperCase() as Priority;
}

function cancelAfter(req: Request): string | undefined {
  return req.get('cancel-after')?.trim() || undefined;
}

function jobFilter(req: Request) {
  const status = queryString(req, 'status') || undefined;
  if (status !== undefined && !STATUSES.includes(status))
    throw AppError.validation({ status: `must be one of ${STATUSES.join(', ')}` });
  return {
    status: status?.toUpperCase() as JobStatus | undefined,
    modelId: queryString(req, 'model_id') || undefined,
  };
}

function jobOrder(req: Request): JobOrder | undefined {
  const sort = queryString(req, 'sort') || undefined;
  if (sort !== undefined && !(JOB_ORDERS as readonly string[]).includes(sort))
    throw AppError.validation({ sort: `must be one of ${JOB_ORDERS.join(', ')}` });
  return sort?.toUpperCase() as JobOrder | undefined;
}

/** Deployments and jobs: `/api/v1/deployments`, `/api/v1/jobs`. */
export const jobRoutes = [
  route({
    method: 'post',
    path: '/api/v1/deployments',
    summary: 'Run a model over your media: creates the deployment and its queued job',
    request: requestBody(
      {
        name: string,
        model_id: uuid,
        version_id: { ...uuid, description: "the model's version to run; default its latest" },
        args: mapOf(argValue),
        webhook: {
          ...url,
          description: 'told of the job as `webhook_events_filter` says (docs/webhooks.md)',
        },
        webhook_events_filter: { ...arrayOf(enumOf(WEBHOOK_EVENTS)), description: 'default `["completed"]`' },
        priority: {
          ...enumOf(PRIORITIES),
          description:
            "order among the owner's jobs, default `normal`; `high` for a team needs admin or owner",
        },
      },
      ['name', 'model_id'],
    ),
    headers: {
      Prefer: {
        description: `\`wait\` or \`wait=N\`: answer once the job has ended or N seconds (at most ${MAX_WAIT_SECONDS}) passed, with the job in \`job\``,
        schema: string,
      },
      ...cancelAfterHeader,
      ...idempotency.headers,
    },
    status: 201,
    response: object(
      {
        id: uuid,
        model_id: uuid,
        source_asset_id: nullable(uuid),
        target_asset_id: uuid,
        job: { ...jobSchema, description: 'with `Prefer: wait` only' },
      },
      ['job'],
    ),
    responseHeaders: {
      'Preference-Applied': { description: '`wait=N` when the answer waited', schema: string },
      ...idempotency.responseHeaders,
    },
    document: CreateDeploymentDocument,
    variables: (req) => {
      const b = body(req);
      const wait = preferredWait(req);
      return {
        input: {
          name: b.name as string,
          modelId: optionalString(b, 'model_id') as string,
          versionId: optionalString(b, 'version_id'),
          args: (b.args ?? null) as Record<string, unknown> | null,
          cancelAfter: cancelAfter(req),
          webhook: optionalString(b, 'webhook'),
          webhookEventsFilter: webhookEvents(b.webhook_events_filter),
          priority: priority(b.priority),
        },
        wait,
        withJob: wait !== undefined,
      };
    },
    respond: ({ createDeployment: d }, req) => {
      const wait = preferredWait(req);
      return {
        status: 201,
        body: {
          id: d.id,
          model_id: d.modelId,
          source_asset_id: d.sourceAssetId,
          target_asset_id: d.targetAssetId,
          ...(d.job ? { job: jobJson(d.job) } : {}),
        },
        headers: wait === undefined ? undefined : { 'Preference-Applied': `wait=${wait}`, Vary: 'Prefer' },
      };
    },
  }),
  route({
    method: 'get',
    path: '/api/v1/deployments',
    summary: 'List your deployments, each with its job',
    paged: true,
    response: arrayOf(deploymentSchema),
    document: ListDeploymentsDocument,
    variables: (req) => pageVariables(req),
    respond: ({ deployments }, req) => listResponse(req, deployments, deploymentJson),
  }),
  route({
    method: 'get',
    path: '/api/v1/deployments/:id',
    summary: 'One deployment with its job',
    response: deploymentSchema,
    document: GetDeploymentDocument,
    variables: (req) => ({ id: String(req.params.id) }),
    respond: ({ deployment }) => ({ body: deploymentJson(deployment) }),
  }),
  route({
    method: 'get',
    path: '/api/v1/jobs',
    summary: 'List your jobs: state, output and result URLs',
    paged: true,
    query: {
      status: { description: 'only jobs in this state', schema: enumOf(STATUSES) },
      model_id: { description: 'only jobs of this model', schema: uuid },
      sort: {
        description:
          '`created_at` (default): newest first. `cost`: most expensive first; `cost_asc`: cheapest first. By cost, only ended jobs are listed (their cost is final), with the current price list; it takes no `status` or `model_id` (docs/governance.md)',
        schema: enumOf(JOB_ORDERS),
      },
    },
    response: arrayOf(jobSchema),
    document: ListJobsDocument,
    variables: (req) => ({ ...pageVariables(req), filter: jobFilter(req), orderBy: jobOrder(req) }),
    respond: ({ jobs }, req) => listResponse(req, jobs, jobJson),
  }),
  route({
    method: 'get',
    path: '/api/v1/jobs/:id',
    summary: 'One job',
    response: jobSchema,
    document: GetJobDocument,
    variables: (req) => ({ id: String(req.params.id) }),
    respond: ({ job }) => ({ body: jobJson(job) }),
  }),
  route({
    method: 'post',
    path: '/api/v1/jobs/:id/cancel',
    summary: 'Cancel a job that has not ended; an ended job is answered as it is',
    response: jobSchema,
    document: CancelJobDocument,
    variables: (req) => ({ id: String(req.params.id) }),
    respond: ({ cancelJob }) => ({ body: jobJson(cancelJob) }),
  }),
  route({
    method: 'post',
    path: '/api/v1/jobs/:id/retry',
    summary: 'Run an ended job again: a new job of the same deployment and arguments, linked by `retry_of`',
    headers: cancelAfterHeader,
    status: 201,
    response: jobSchema,
    document: RetryJobDocument,
    variables: (req) => ({ id: String(req.params.id), cancelAfter: cancelAfter(req) }),
    respond: ({ retryJob }) => ({ status: 201, body: jobJson(retryJob) }),
  }),
];
