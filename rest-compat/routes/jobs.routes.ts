import type { Request } from 'express';
import { AppError } from '../../src/common/errors';
import {
  CancelJobDocument,
  CreateDeploymentDocument,
  GetDeploymentDocument,
  GetJobDocument,
  ListDeploymentsDocument,
  ListJobsDocument,
  type JobStatus,
  type RestDeploymentFragment,
  type RestJobFragment,
} from '../generated/graphql';
import { body, listResponse, optionalString, pageVariables, queryString } from '../rest.helpers';
import { route } from '../route';
import {
  anything,
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
} from '../schemas';

const STATUSES = ['queued', 'starting', 'running', 'succeeded', 'failed', 'canceled'];

/** An argument value: a number, a string, or a media id for a file argument. */
const argValue = { type: ['string', 'number'] };

const jobSchema = object({
  id: uuid,
  deployment_id: uuid,
  model_id: uuid,
  status: enumOf(STATUSES),
  executor: string,
  external_id: nullable(string),
  nodes: { ...arrayOf(string), description: 'the hosts the job runs or ran on (Slurm, Kubernetes)' },
  pending_reason: {
    ...nullable(string),
    description: "why a queued job waits on the cluster manager, in the scheduler's words",
  },
  exit_code: nullable(integer),
  error: nullable(string),
  created_at: isoTime,
  started_at: nullable(isoTime),
  finished_at: nullable(isoTime),
  queue_seconds: nullable(number),
  run_seconds: nullable(number),
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
  created_at: isoTime,
  job: jobSchema,
});

/** A job as REST shows it (the spec leaves the shape open; see docs/jobs.md). */
const jobJson = (j: RestJobFragment) => ({
  id: j.id,
  deployment_id: j.deploymentId,
  model_id: j.modelId,
  status: j.status.toLowerCase(),
  executor: j.executor,
  external_id: j.externalId,
  nodes: j.nodes,
  pending_reason: j.pendingReason,
  exit_code: j.exitCode,
  error: j.error,
  created_at: j.createdAt,
  started_at: j.startedAt,
  finished_at: j.finishedAt,
  queue_seconds: j.queueSeconds,
  run_seconds: j.runSeconds,
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
  created_at: d.createdAt,
  job: jobJson(d.job),
});

function jobFilter(req: Request) {
  const status = queryString(req, 'status') || undefined;
  if (status !== undefined && !STATUSES.includes(status))
    throw AppError.validation({ status: `must be one of ${STATUSES.join(', ')}` });
  return {
    status: status?.toUpperCase() as JobStatus | undefined,
    modelId: queryString(req, 'model_id') || undefined,
  };
}

/** Deployments and jobs: `/api/v1/deployments`, `/api/v1/jobs`. */
export const jobRoutes = [
  route({
    method: 'post',
    path: '/api/v1/deployments',
    summary: 'Run a model over your media: creates the deployment and its queued job',
    request: requestBody({ name: string, model_id: uuid, args: mapOf(argValue) }, ['name', 'model_id']),
    status: 201,
    response: object({ id: uuid, model_id: uuid, source_asset_id: nullable(uuid), target_asset_id: uuid }),
    document: CreateDeploymentDocument,
    variables: (req) => {
      const b = body(req);
      return {
        input: {
          name: b.name as string,
          modelId: optionalString(b, 'model_id') as string,
          args: (b.args ?? null) as Record<string, unknown> | null,
        },
      };
    },
    respond: ({ createDeployment: d }) => ({
      status: 201,
      body: {
        id: d.id,
        model_id: d.modelId,
        source_asset_id: d.sourceAssetId,
        target_asset_id: d.targetAssetId,
      },
    }),
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
    },
    response: arrayOf(jobSchema),
    document: ListJobsDocument,
    variables: (req) => ({ ...pageVariables(req), filter: jobFilter(req) }),
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
];
