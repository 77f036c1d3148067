import { AppError } from '../../src/common/errors';
import {
  CancelBatchDocument,
  CreateBatchDocument,
  GetBatchDocument,
  ListBatchesDocument,
  ListBatchJobsDocument,
  RetryBatchDocument,
  type JobStatus,
  type RestBatchFragment,
} from '../generated/graphql';
import { body, listResponse, optionalString, pageVariables, queryString } from '../../src/http/http.rest';
import {
  arrayOf,
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
import { WEBHOOK_EVENTS } from '../../src/jobs/job.webhook-events';
import { route } from '../route';
import { argValue, jobJson, jobSchema, STATUSES, webhookEvents } from './jobs.routes';

const count = { ...integer, minimum: 0 };

const batchSchema = object({
  id: uuid,
  name: string,
  model_id: uuid,
  args: mapOf(argValue),
  status: {
    ...enumOf(['running', 'completed', 'canceled']),
    description: '`completed` once every job has ended',
  },
  total: { ...count, description: 'its items (deployments)' },
  counts: {
    ...object({
      queued: count,
      starting: count,
      running: count,
      succeeded: count,
      failed: count,
      canceled: count,
    }),
    description: "the items by their latest job's state (a retry replaces the job it retries)",
  },
  created_at: isoTime,
  started_at: nullable(isoTime),
  finished_at: nullable(isoTime),
  run_seconds: { ...number, description: 'run time of all its jobs, retries included' },
  webhook: nullable(url),
  webhook_events_filter: arrayOf(enumOf(WEBHOOK_EVENTS)),
});

/** A batch as REST shows it (docs/batches.md). */
const batchJson = (b: RestBatchFragment) => ({
  id: b.id,
  name: b.name,
  model_id: b.modelId,
  args: b.args,
  status: b.status.toLowerCase(),
  total: b.total,
  counts: {
    queued: b.counts.queued,
    starting: b.counts.starting,
    running: b.counts.running,
    succeeded: b.counts.succeeded,
    failed: b.counts.failed,
    canceled: b.counts.canceled,
  },
  created_at: b.createdAt,
  started_at: b.startedAt,
  finished_at: b.finishedAt,
  run_seconds: b.runSeconds,
  webhook: b.webhook,
  webhook_events_filter: b.webhookEventsFilter.map((e) => e.toLowerCase()),
});

/** A list given in the body, as it is (its items are checked by the schema's types). */
function listOf(b: Record<string, unknown>, name: string): unknown[] | undefined {
  const v = b[name];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw AppError.validation({ [`inputs.${name}`]: 'must be a list' });
  return v;
}

/** `inputs` of the body as the GraphQL input (snake_case to camelCase). */
function inputsOf(value: unknown) {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw AppError.validation({ inputs: 'must be an object: media_ids, tags or items' });
  const i = value as Record<string, unknown>;
  return {
    arg: optionalString(i, 'arg'),
    mediaIds: listOf(i, 'media_ids') as string[] | undefined,
    tags: listOf(i, 'tags') as string[] | undefined,
    excludeTags: listOf(i, 'exclude_tags') as string[] | undefined,
    items: listOf(i, 'items') as Record<string, unknown>[] | undefined,
  };
}

/** Batches: `/api/v1/batches` (docs/batches.md). */
export const batchRoutes = [
  route({
    method: 'post',
    path: '/api/v1/batches',
    summary: 'Run a model over many inputs in one request: one deployment and job per item',
    request: requestBody(
      {
        name: string,
        model_id: uuid,
        args: { ...mapOf(argValue), description: 'arguments common to every item' },
        inputs: {
          ...object(
            {
              arg: { ...string, description: 'the file argument each selected media asset goes to' },
              media_ids: arrayOf(uuid),
              tags: { ...arrayOf(string), description: 'your live media with any of these tags' },
              exclude_tags: { ...arrayOf(string), description: 'leaves out media with any of these tags' },
              items: { ...arrayOf(mapOf(argValue)), description: "each item's arguments, over `args`" },
            },
            ['arg', 'media_ids', 'tags', 'exclude_tags', 'items'],
          ),
          description: 'exactly one of `media_ids`, `tags` (with `exclude_tags`) or `items`',
        },
        webhook: { ...url, description: "the batch's webhook" },
        webhook_events_filter: arrayOf(enumOf(WEBHOOK_EVENTS)),
      },
      ['name', 'model_id', 'inputs'],
    ),
    status: 201,
    response: batchSchema,
    document: CreateBatchDocument,
    variables: (req) => {
      const b = body(req);
      return {
        input: {
          name: b.name as string,
          modelId: optionalString(b, 'model_id') as string,
          args: (b.args ?? null) as Record<string, unknown> | null,
          inputs: inputsOf(b.inputs),
          webhook: optionalString(b, 'webhook'),
          webhookEventsFilter: webhookEvents(b.webhook_events_filter),
        },
      };
    },
    respond: ({ createBatch }) => ({ status: 201, body: batchJson(createBatch) }),
  }),
  route({
    method: 'get',
    path: '/api/v1/batches',
    summary: 'List your batches with their counts',
    paged: true,
    response: arrayOf(batchSchema),
    document: ListBatchesDocument,
    variables: (req) => pageVariables(req),
    respond: ({ batches }, req) => listResponse(req, batches, batchJson),
  }),
  route({
    method: 'get',
    path: '/api/v1/batches/:id',
    summary: 'One batch: its state, counts and times',
    response: batchSchema,
    document: GetBatchDocument,
    variables: (req) => ({ id: String(req.params.id) }),
    respond: ({ batch }) => ({ body: batchJson(batch) }),
  }),
  route({
    method: 'get',
    path: '/api/v1/batches/:id/jobs',
    summary: "A batch's jobs, retries included",
    paged: true,
    query: { status: { description: 'only jobs in this state', schema: enumOf(STATUSES) } },
    response: arrayOf(jobSchema),
    document: ListBatchJobsDocument,
    variables: (req) => {
      const status = queryString(req, 'status') || undefined;
      if (status !== undefined && !STATUSES.includes(status))
        throw AppError.validation({ status: `must be one of ${STATUSES.join(', ')}` });
      return { ...pageVariables(req), id: String(req.params.id), status: status?.toUpperCase() as JobStatus };
    },
    respond: ({ batchJobs }, req) => listResponse(req, batchJobs, jobJson),
  }),
  route({
    method: 'post',
    path: '/api/v1/batches/:id/cancel',
    summary: 'Cancel every job of the batch that has not ended',
    response: batchSchema,
    document: CancelBatchDocument,
    variables: (req) => ({ id: String(req.params.id) }),
    respond: ({ cancelBatch }) => ({ body: batchJson(cancelBatch) }),
  }),
  route({
    method: 'post',
    path: '/api/v1/batches/:id/retry',
    summary: "Run the batch's failed jobs again: new jobs in the same batch",
    response: batchSchema,
    document: RetryBatchDocument,
    variables: (req) => ({ id: String(req.params.id) }),
    respond: ({ retryBatch }) => ({ body: batchJson(retryBatch) }),
  }),
];
