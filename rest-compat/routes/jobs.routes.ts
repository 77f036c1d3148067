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

const STATUSES = ['queued', 'starting', 'running', 'succeeded', 'failed', 'canceled'];

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
    document: ListDeploymentsDocument,
    variables: (req) => pageVariables(req),
    respond: ({ deployments }, req) => listResponse(req, deployments, deploymentJson),
  }),
  route({
    method: 'get',
    path: '/api/v1/deployments/:id',
    document: GetDeploymentDocument,
    variables: (req) => ({ id: String(req.params.id) }),
    respond: ({ deployment }) => ({ body: deploymentJson(deployment) }),
  }),
  route({
    method: 'get',
    path: '/api/v1/jobs',
    document: ListJobsDocument,
    variables: (req) => ({ ...pageVariables(req), filter: jobFilter(req) }),
    respond: ({ jobs }, req) => listResponse(req, jobs, jobJson),
  }),
  route({
    method: 'get',
    path: '/api/v1/jobs/:id',
    document: GetJobDocument,
    variables: (req) => ({ id: String(req.params.id) }),
    respond: ({ job }) => ({ body: jobJson(job) }),
  }),
  route({
    method: 'post',
    path: '/api/v1/jobs/:id/cancel',
    document: CancelJobDocument,
    variables: (req) => ({ id: String(req.params.id) }),
    respond: ({ cancelJob }) => ({ body: jobJson(cancelJob) }),
  }),
];
