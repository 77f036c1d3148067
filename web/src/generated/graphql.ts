/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
/** Exactly one of mediaIds, tags (with excludeTags) or items. */
export type BatchInputsInput = {
  /** The file argument each selected media asset goes to. */
  arg?: string | null | undefined;
  /** Leaves out media with any of these tags. */
  excludeTags?: Array<string> | null | undefined;
  /** One item per object: its arguments, merged over the batch's args. */
  items?: Array<Record<string, unknown>> | null | undefined;
  /** One item per media asset of yours. */
  mediaIds?: Array<string | number> | null | undefined;
  /** One item per live media asset of yours with any of these tags (as the media list filters). */
  tags?: Array<string> | null | undefined;
};

/** RUNNING until every job has ended (COMPLETED), or CANCELED by its owner. */
export type BatchStatus =
  | 'CANCELED'
  | 'COMPLETED'
  | 'RUNNING';

/** `BLOCK`: refuse work that could pass the limit (402 BUDGET_EXCEEDED); `NOTIFY`: only announce. */
export type BudgetAction =
  | 'BLOCK'
  | 'NOTIFY';

export type CreateApiKeyInput = {
  name: string;
  /** A team key's role: `member` (default) or `viewer`. */
  role?: string | null | undefined;
  /** Makes the key an organisation token of this team. */
  teamId?: string | number | null | undefined;
};

export type CreateBatchInput = {
  /** Arguments common to every item. */
  args?: Record<string, unknown> | null | undefined;
  inputs: BatchInputsInput;
  modelId: string | number;
  name: string;
  /** The model version every item runs; the latest when left out. */
  versionId?: string | number | null | undefined;
  /** The batch's webhook (its events come later). */
  webhook?: string | null | undefined;
  webhookEventsFilter?: Array<WebhookEvent> | null | undefined;
};

export type CreateDeploymentInput = {
  /** Argument name -> value (int, float, string, or a media id for a file argument). */
  args?: Record<string, unknown> | null | undefined;
  /** Cancel the job if it has not ended after this duration, queue time included (30s, 5m, 1h30m). */
  cancelAfter?: string | null | undefined;
  modelId: string | number;
  name: string;
  /** Default: NORMAL. */
  priority?: Priority | null | undefined;
  /** The model's version to run (400 for another model's); default: its latest. */
  versionId?: string | number | null | undefined;
  /** An https URL to POST its jobs to as events happen, signed (docs/webhooks.md). */
  webhook?: string | null | undefined;
  /** Default: COMPLETED only. */
  webhookEventsFilter?: Array<WebhookEvent> | null | undefined;
};

export type InviteToTeamInput = {
  /** Exactly one of email and username. */
  email?: string | null | undefined;
  /** `member` when left out. */
  role?: TeamRole | null | undefined;
  username?: string | null | undefined;
};

/** CREATED_AT: newest first (the default). COST: most expensive first; COST_ASC: cheapest first. By cost, only ended jobs are listed (their cost is final), priced with the current price list, ties by machine time then id; it takes no filter. */
export type JobOrder =
  | 'COST'
  | 'COST_ASC'
  | 'CREATED_AT';

/** QUEUED -> STARTING -> RUNNING -> SUCCEEDED | FAILED | CANCELED; never back. */
export type JobStatus =
  | 'CANCELED'
  | 'FAILED'
  | 'QUEUED'
  | 'RUNNING'
  | 'STARTING'
  | 'SUCCEEDED';

export type LogStream =
  | 'STDERR'
  | 'STDOUT';

export type MediaFilterInput = {
  /** Leaves out assets carrying any of these tags. */
  excludeTags?: Array<string> | null | undefined;
  /** Assets carrying any of these tags. */
  tags?: Array<string> | null | undefined;
  type?: MediaType | null | undefined;
};

/** SOURCE_ASSET: uploaded; TARGET_ASSET: written by a job. */
export type MediaType =
  | 'SOURCE_ASSET'
  | 'TARGET_ASSET';

export type ModelFilterInput = {
  /** Only the viewer's own models. */
  mine?: boolean | null | undefined;
  /** Models carrying any of these tags. */
  tags?: Array<string> | null | undefined;
};

/** Order among the owner's own jobs (higher first, then age); across owners fair share decides. HIGH for a team needs admin or owner. */
export type Priority =
  | 'HIGH'
  | 'LOW'
  | 'NORMAL';

/** What a member may do in a team (docs/teams.md has the matrix). */
export type TeamRole =
  | 'ADMIN'
  | 'MEMBER'
  | 'OWNER'
  | 'VIEWER';

/** START: the job runs; OUTPUT: it produced its outputs; LOGS: it printed lines (at most every 500 ms); COMPLETED: it ended. */
export type WebhookEvent =
  | 'COMPLETED'
  | 'LOGS'
  | 'OUTPUT'
  | 'START';

export type ViewerQueryVariables = Exact<{ [key: string]: never; }>;


export type ViewerQuery = { me: { id: string, userId: string, username: string, name: string | null, email: string | null, teamId: string | null, isAdmin: boolean }, teams: { nodes: Array<{ id: string, name: string, role: TeamRole }> } };

export type CreateTeamMutationVariables = Exact<{
  name: string;
}>;


export type CreateTeamMutation = { createTeam: { id: string, name: string, role: TeamRole } };

export type ApiKeyRowFragment = { id: string, name: string, teamId: string | null, role: string | null, createdByUsername: string | null, createdAt: string, lastUsedAt: string | null, revokedAt: string | null };

export type ApiKeysQueryVariables = Exact<{
  teamId?: string | number | null | undefined;
}>;


export type ApiKeysQuery = { apiKeys: { nodes: Array<{ id: string, name: string, teamId: string | null, role: string | null, createdByUsername: string | null, createdAt: string, lastUsedAt: string | null, revokedAt: string | null }> } };

export type CreateApiKeyMutationVariables = Exact<{
  input: CreateApiKeyInput;
}>;


export type CreateApiKeyMutation = { createApiKey: { value: string, apiKey: { id: string, name: string, teamId: string | null, role: string | null, createdByUsername: string | null, createdAt: string, lastUsedAt: string | null, revokedAt: string | null } } };

export type RevokeApiKeyMutationVariables = Exact<{
  id: string | number;
}>;


export type RevokeApiKeyMutation = { revokeApiKey: { id: string, name: string, teamId: string | null, role: string | null, createdByUsername: string | null, createdAt: string, lastUsedAt: string | null, revokedAt: string | null } };

export type SecretsQueryVariables = Exact<{ [key: string]: never; }>;


export type SecretsQuery = { secrets: Array<{ name: string, createdAt: string, updatedAt: string }> };

export type SetSecretMutationVariables = Exact<{
  name: string;
  value: string;
}>;


export type SetSecretMutation = { setSecret: { name: string, createdAt: string, updatedAt: string } };

export type DeleteSecretMutationVariables = Exact<{
  name: string;
}>;


export type DeleteSecretMutation = { deleteSecret: string };

export type BatchItemFragment = { id: string, name: string, modelId: string, status: BatchStatus, total: number, createdAt: string, startedAt: string | null, finishedAt: string | null, runSeconds: number, counts: { queued: number, starting: number, running: number, succeeded: number, failed: number, canceled: number } };

export type BatchListQueryVariables = Exact<{
  first?: number | null | undefined;
  after?: string | null | undefined;
}>;


export type BatchListQuery = { batches: { nodes: Array<{ id: string, name: string, modelId: string, status: BatchStatus, total: number, createdAt: string, startedAt: string | null, finishedAt: string | null, runSeconds: number, counts: { queued: number, starting: number, running: number, succeeded: number, failed: number, canceled: number } }>, pageInfo: { endCursor: string | null, hasNextPage: boolean } } };

export type BatchOneQueryVariables = Exact<{
  id: string | number;
}>;


export type BatchOneQuery = { batch: { id: string, name: string, modelId: string, status: BatchStatus, total: number, createdAt: string, startedAt: string | null, finishedAt: string | null, runSeconds: number, counts: { queued: number, starting: number, running: number, succeeded: number, failed: number, canceled: number } } };

export type BatchJobListQueryVariables = Exact<{
  id: string | number;
  status?: JobStatus | null | undefined;
  first?: number | null | undefined;
  after?: string | null | undefined;
}>;


export type BatchJobListQuery = { batchJobs: { nodes: Array<{ id: string, status: JobStatus, error: string | null, createdAt: string }>, pageInfo: { endCursor: string | null, hasNextPage: boolean } } };

export type BatchModelsQueryVariables = Exact<{
  first?: number | null | undefined;
}>;


export type BatchModelsQuery = { models: { nodes: Array<{ id: string, name: string, args: Array<{ name: string, type: string, optional: boolean }> }> } };

export type CreateBatchRunMutationVariables = Exact<{
  input: CreateBatchInput;
}>;


export type CreateBatchRunMutation = { createBatch: { id: string } };

export type CancelBatchRunMutationVariables = Exact<{
  id: string | number;
}>;


export type CancelBatchRunMutation = { cancelBatch: { id: string, name: string, modelId: string, status: BatchStatus, total: number, createdAt: string, startedAt: string | null, finishedAt: string | null, runSeconds: number, counts: { queued: number, starting: number, running: number, succeeded: number, failed: number, canceled: number } } };

export type RetryBatchRunMutationVariables = Exact<{
  id: string | number;
}>;


export type RetryBatchRunMutation = { retryBatch: { id: string, name: string, modelId: string, status: BatchStatus, total: number, createdAt: string, startedAt: string | null, finishedAt: string | null, runSeconds: number, counts: { queued: number, starting: number, running: number, succeeded: number, failed: number, canceled: number } } };

export type BatchLiveSubscriptionVariables = Exact<{
  id: string | number;
}>;


export type BatchLiveSubscription = { batchUpdated: { id: string, name: string, modelId: string, status: BatchStatus, total: number, createdAt: string, startedAt: string | null, finishedAt: string | null, runSeconds: number, counts: { queued: number, starting: number, running: number, succeeded: number, failed: number, canceled: number } } };

export type JobRowFragment = { id: string, status: JobStatus, createdAt: string, updatedAt: string, cost: { amount: string, currency: string, final: boolean }, deployment: { id: string, name: string }, model: { id: string, name: string } | null };

export type JobListQueryVariables = Exact<{
  first?: number | null | undefined;
  after?: string | null | undefined;
  orderBy?: JobOrder | null | undefined;
}>;


export type JobListQuery = { jobs: { nodes: Array<{ id: string, status: JobStatus, createdAt: string, updatedAt: string, cost: { amount: string, currency: string, final: boolean }, deployment: { id: string, name: string }, model: { id: string, name: string } | null }>, pageInfo: { endCursor: string | null, hasNextPage: boolean } } };

export type JobEventsSubscriptionVariables = Exact<{ [key: string]: never; }>;


export type JobEventsSubscription = { jobs: { id: string, status: JobStatus, createdAt: string, updatedAt: string, cost: { amount: string, currency: string, final: boolean }, deployment: { id: string, name: string }, model: { id: string, name: string } | null } };

export type JobDetailFragment = { priority: Priority, queuePosition: number | null, pendingReason: string | null, machineType: string, machineCount: number, startedAt: string | null, finishedAt: string | null, queueSeconds: number | null, runSeconds: number | null, error: string | null, exitCode: number | null, result: unknown, id: string, status: JobStatus, createdAt: string, updatedAt: string, transitions: Array<{ from: JobStatus | null, to: JobStatus, at: string }>, outputs: Array<{ id: string, url: string, contentType: string, imageName: string, size: number }>, deployment: { id: string, name: string, args: Record<string, unknown>, modelId: string }, cost: { amount: string, currency: string, final: boolean }, model: { id: string, name: string } | null };

export type JobPageQueryVariables = Exact<{
  id: string | number;
}>;


export type JobPageQuery = { job: { logTail: string, priority: Priority, queuePosition: number | null, pendingReason: string | null, machineType: string, machineCount: number, startedAt: string | null, finishedAt: string | null, queueSeconds: number | null, runSeconds: number | null, error: string | null, exitCode: number | null, result: unknown, id: string, status: JobStatus, createdAt: string, updatedAt: string, model: { id: string, name: string, args: Array<{ name: string, type: string, description: string | null }> } | null, transitions: Array<{ from: JobStatus | null, to: JobStatus, at: string }>, outputs: Array<{ id: string, url: string, contentType: string, imageName: string, size: number }>, deployment: { id: string, name: string, args: Record<string, unknown>, modelId: string }, cost: { amount: string, currency: string, final: boolean } } };

export type MediaNameQueryVariables = Exact<{
  id: string | number;
}>;


export type MediaNameQuery = { mediaAsset: { id: string, imageName: string, url: string } };

export type JobWatchSubscriptionVariables = Exact<{
  id: string | number;
}>;


export type JobWatchSubscription = { jobUpdated: { priority: Priority, queuePosition: number | null, pendingReason: string | null, machineType: string, machineCount: number, startedAt: string | null, finishedAt: string | null, queueSeconds: number | null, runSeconds: number | null, error: string | null, exitCode: number | null, result: unknown, id: string, status: JobStatus, createdAt: string, updatedAt: string, transitions: Array<{ from: JobStatus | null, to: JobStatus, at: string }>, outputs: Array<{ id: string, url: string, contentType: string, imageName: string, size: number }>, deployment: { id: string, name: string, args: Record<string, unknown>, modelId: string }, cost: { amount: string, currency: string, final: boolean }, model: { id: string, name: string } | null } };

export type JobLogsSubscriptionVariables = Exact<{
  id: string | number;
}>;


export type JobLogsSubscription = { jobLogs: { line: string, stream: LogStream } };

export type CancelJobMutationVariables = Exact<{
  id: string | number;
}>;


export type CancelJobMutation = { cancelJob: { id: string, status: JobStatus } };

export type RunDeploymentMutationVariables = Exact<{
  input: CreateDeploymentInput;
}>;


export type RunDeploymentMutation = { createDeployment: { id: string, job: { id: string } } };

export type MediaItemFragment = { id: string, url: string, imageName: string, contentType: string, size: number, tags: Array<string>, type: MediaType, createdAt: string };

export type MediaListQueryVariables = Exact<{
  first?: number | null | undefined;
  after?: string | null | undefined;
  filter?: MediaFilterInput | null | undefined;
}>;


export type MediaListQuery = { media: { nodes: Array<{ id: string, url: string, imageName: string, contentType: string, size: number, tags: Array<string>, type: MediaType, createdAt: string }>, pageInfo: { endCursor: string | null, hasNextPage: boolean } } };

export type UpdateMediaTagsMutationVariables = Exact<{
  id: string | number;
  tags: Array<string> | string;
}>;


export type UpdateMediaTagsMutation = { updateMediaTags: { id: string, url: string, imageName: string, contentType: string, size: number, tags: Array<string>, type: MediaType, createdAt: string } };

export type DeleteMediaMutationVariables = Exact<{
  id: string | number;
}>;


export type DeleteMediaMutation = { deleteMedia: string };

export type ModelCardFragment = { id: string, name: string, description: string | null, tags: Array<string>, version: string, builtin: boolean, likeCount: number, followCount: number, runCount: number, viewerLikes: boolean, viewerFollows: boolean };

export type ModelListQueryVariables = Exact<{
  first?: number | null | undefined;
  after?: string | null | undefined;
  filter?: ModelFilterInput | null | undefined;
}>;


export type ModelListQuery = { models: { nodes: Array<{ id: string, name: string, description: string | null, tags: Array<string>, version: string, builtin: boolean, likeCount: number, followCount: number, runCount: number, viewerLikes: boolean, viewerFollows: boolean }>, pageInfo: { endCursor: string | null, hasNextPage: boolean } } };

export type ModelRunFormQueryVariables = Exact<{
  id: string | number;
}>;


export type ModelRunFormQuery = { model: { id: string, name: string, description: string | null, tags: Array<string>, version: string, builtin: boolean, likeCount: number, followCount: number, runCount: number, viewerLikes: boolean, viewerFollows: boolean, args: Array<{ name: string, type: string, description: string | null, example: string | null, min: number | null, max: number | null, optional: boolean, choices: Array<string> | null }> } };

export type LikeModelMutationVariables = Exact<{
  id: string | number;
}>;


export type LikeModelMutation = { likeModel: { id: string, name: string, description: string | null, tags: Array<string>, version: string, builtin: boolean, likeCount: number, followCount: number, runCount: number, viewerLikes: boolean, viewerFollows: boolean } };

export type UnlikeModelMutationVariables = Exact<{
  id: string | number;
}>;


export type UnlikeModelMutation = { unlikeModel: { id: string, name: string, description: string | null, tags: Array<string>, version: string, builtin: boolean, likeCount: number, followCount: number, runCount: number, viewerLikes: boolean, viewerFollows: boolean } };

export type FollowModelMutationVariables = Exact<{
  id: string | number;
}>;


export type FollowModelMutation = { followModel: { id: string, name: string, description: string | null, tags: Array<string>, version: string, builtin: boolean, likeCount: number, followCount: number, runCount: number, viewerLikes: boolean, viewerFollows: boolean } };

export type UnfollowModelMutationVariables = Exact<{
  id: string | number;
}>;


export type UnfollowModelMutation = { unfollowModel: { id: string, name: string, description: string | null, tags: Array<string>, version: string, builtin: boolean, likeCount: number, followCount: number, runCount: number, viewerLikes: boolean, viewerFollows: boolean } };

export type ModelVersionRowFragment = { id: string, sequence: number, container: string, command: string, machineType: string, machineCount: number, timeoutSeconds: number, secrets: Array<string>, createdAt: string, args: Array<{ name: string, type: string, format: string, optional: boolean, min: number | null, max: number | null, choices: Array<string> | null }> };

export type ModelProductQueryVariables = Exact<{
  id: string | number;
}>;


export type ModelProductQuery = { model: { id: string, visibility: string, sharedWith: Array<string> | null, secrets: Array<string>, viewerCanEdit: boolean, versions: { nodes: Array<{ id: string, sequence: number, container: string, command: string, machineType: string, machineCount: number, timeoutSeconds: number, secrets: Array<string>, createdAt: string, args: Array<{ name: string, type: string, format: string, optional: boolean, min: number | null, max: number | null, choices: Array<string> | null }> }> } } };

export type SetModelVisibilityMutationVariables = Exact<{
  id: string | number;
  visibility: string;
}>;


export type SetModelVisibilityMutation = { updateModel: { id: string, visibility: string } };

export type MemberRowFragment = { userId: string, username: string, email: string | null, name: string | null, role: TeamRole, joinedAt: string };

export type InviteRowFragment = { id: string, teamId: string, teamName: string | null, email: string | null, username: string | null, role: TeamRole, status: string, expiresAt: string, invitedByUsername: string | null, mailState: string, mailError: string | null };

export type TeamPageQueryVariables = Exact<{
  id: string | number;
}>;


export type TeamPageQuery = { me: { id: string }, team: { id: string, name: string, role: TeamRole, memberCount: number | null, members: { nodes: Array<{ userId: string, username: string, email: string | null, name: string | null, role: TeamRole, joinedAt: string }> } } };

export type TeamInvitesQueryVariables = Exact<{
  id: string | number;
}>;


export type TeamInvitesQuery = { team: { id: string, invites: { nodes: Array<{ id: string, teamId: string, teamName: string | null, email: string | null, username: string | null, role: TeamRole, status: string, expiresAt: string, invitedByUsername: string | null, mailState: string, mailError: string | null }> } } };

export type TeamAuditQueryVariables = Exact<{
  id: string | number;
  action?: string | null | undefined;
  actorId?: string | number | null | undefined;
}>;


export type TeamAuditQuery = { team: { id: string, auditLog: { nodes: Array<{ id: string, at: string, action: string, targetType: string, targetId: string | null, details: Record<string, unknown>, actor: { userId: string | null, via: string, apiKeyId: string | null } }> } } };

export type InviteMemberMutationVariables = Exact<{
  teamId: string | number;
  input: InviteToTeamInput;
}>;


export type InviteMemberMutation = { inviteToTeam: { token: string, inviteUrl: string, invite: { id: string, teamId: string, teamName: string | null, email: string | null, username: string | null, role: TeamRole, status: string, expiresAt: string, invitedByUsername: string | null, mailState: string, mailError: string | null } } };

export type RevokeTeamInviteMutationVariables = Exact<{
  teamId: string | number;
  inviteId: string | number;
}>;


export type RevokeTeamInviteMutation = { revokeInvite: { id: string } };

export type ChangeMemberRoleMutationVariables = Exact<{
  teamId: string | number;
  userId: string | number;
  role: TeamRole;
}>;


export type ChangeMemberRoleMutation = { setTeamMemberRole: { userId: string, username: string, email: string | null, name: string | null, role: TeamRole, joinedAt: string } };

export type RemoveMemberMutationVariables = Exact<{
  teamId: string | number;
  userId: string | number;
}>;


export type RemoveMemberMutation = { removeTeamMember: boolean };

export type LeaveTeamMutationVariables = Exact<{
  teamId: string | number;
}>;


export type LeaveTeamMutation = { leaveTeam: boolean };

export type InviteByTokenQueryVariables = Exact<{
  token: string;
}>;


export type InviteByTokenQuery = { inviteByToken: { id: string, teamId: string, teamName: string | null, email: string | null, username: string | null, role: TeamRole, status: string, expiresAt: string, invitedByUsername: string | null, mailState: string, mailError: string | null } };

export type AcceptTeamInviteMutationVariables = Exact<{
  token: string;
}>;


export type AcceptTeamInviteMutation = { acceptInvite: { member: { role: TeamRole } | null } };

export type DeclineTeamInviteMutationVariables = Exact<{
  token: string;
}>;


export type DeclineTeamInviteMutation = { declineInvite: { invite: { status: string } } };

export type MonthUsageQueryVariables = Exact<{ [key: string]: never; }>;


export type MonthUsageQuery = { quota: { maxRunningJobs: number | null, runningJobs: number, machines: Array<{ machineType: string, limit: number | null, inUse: number }> }, budget: { monthlyLimit: string | null, currency: string, spent: string, committed: string, action: BudgetAction | null }, usage: { currency: string, total: string, period: { start: string, end: string }, series: Array<{ start: string, computeSeconds: string, computeAmount: string, storageByteSeconds: string, storageAmount: string, total: string }>, models: Array<{ modelId: string, name: string | null, jobs: number, seconds: string, amount: string }>, storage: { byteSeconds: string, gbMonths: string, amount: string } } };

export class TypedDocumentString<TResult, TVariables>
  extends String
  implements DocumentTypeDecoration<TResult, TVariables>
{
  __apiType?: NonNullable<DocumentTypeDecoration<TResult, TVariables>['__apiType']>;
  private value: string;
  public __meta__?: Record<string, any> | undefined;

  constructor(value: string, __meta__?: Record<string, any> | undefined) {
    super(value);
    this.value = value;
    this.__meta__ = __meta__;
  }

  override toString(): string & DocumentTypeDecoration<TResult, TVariables> {
    return this.value;
  }
}
export const ApiKeyRowFragmentDoc = new TypedDocumentString(`
    fragment ApiKeyRow on ApiKey {
  id
  name
  teamId
  role
  createdByUsername
  createdAt
  lastUsedAt
  revokedAt
}
    `, {"fragmentName":"ApiKeyRow"}) as unknown as TypedDocumentString<ApiKeyRowFragment, unknown>;
export const BatchItemFragmentDoc = new TypedDocumentString(`
    fragment BatchItem on Batch {
  id
  name
  modelId
  status
  total
  counts {
    queued
    starting
    running
    succeeded
    failed
    canceled
  }
  createdAt
  startedAt
  finishedAt
  runSeconds
}
    `, {"fragmentName":"BatchItem"}) as unknown as TypedDocumentString<BatchItemFragment, unknown>;
export const JobRowFragmentDoc = new TypedDocumentString(`
    fragment JobRow on Job {
  id
  status
  createdAt
  updatedAt
  cost {
    amount
    currency
    final
  }
  deployment {
    id
    name
  }
  model {
    id
    name
  }
}
    `, {"fragmentName":"JobRow"}) as unknown as TypedDocumentString<JobRowFragment, unknown>;
export const JobDetailFragmentDoc = new TypedDocumentString(`
    fragment JobDetail on Job {
  ...JobRow
  priority
  queuePosition
  pendingReason
  machineType
  machineCount
  startedAt
  finishedAt
  queueSeconds
  runSeconds
  error
  exitCode
  result
  transitions {
    from
    to
    at
  }
  outputs {
    id
    url
    contentType
    imageName
    size
  }
  deployment {
    id
    name
    args
    modelId
  }
}
    fragment JobRow on Job {
  id
  status
  createdAt
  updatedAt
  cost {
    amount
    currency
    final
  }
  deployment {
    id
    name
  }
  model {
    id
    name
  }
}`, {"fragmentName":"JobDetail"}) as unknown as TypedDocumentString<JobDetailFragment, unknown>;
export const MediaItemFragmentDoc = new TypedDocumentString(`
    fragment MediaItem on MediaAsset {
  id
  url
  imageName
  contentType
  size
  tags
  type
  createdAt
}
    `, {"fragmentName":"MediaItem"}) as unknown as TypedDocumentString<MediaItemFragment, unknown>;
export const ModelCardFragmentDoc = new TypedDocumentString(`
    fragment ModelCard on Model {
  id
  name
  description
  tags
  version
  builtin
  likeCount
  followCount
  runCount
  viewerLikes
  viewerFollows
}
    `, {"fragmentName":"ModelCard"}) as unknown as TypedDocumentString<ModelCardFragment, unknown>;
export const ModelVersionRowFragmentDoc = new TypedDocumentString(`
    fragment ModelVersionRow on ModelVersion {
  id
  sequence
  container
  command
  machineType
  machineCount
  timeoutSeconds
  secrets
  createdAt
  args {
    name
    type
    format
    optional
    min
    max
    choices
  }
}
    `, {"fragmentName":"ModelVersionRow"}) as unknown as TypedDocumentString<ModelVersionRowFragment, unknown>;
export const MemberRowFragmentDoc = new TypedDocumentString(`
    fragment MemberRow on TeamMember {
  userId
  username
  email
  name
  role
  joinedAt
}
    `, {"fragmentName":"MemberRow"}) as unknown as TypedDocumentString<MemberRowFragment, unknown>;
export const InviteRowFragmentDoc = new TypedDocumentString(`
    fragment InviteRow on TeamInvite {
  id
  teamId
  teamName
  email
  username
  role
  status
  expiresAt
  invitedByUsername
  mailState
  mailError
}
    `, {"fragmentName":"InviteRow"}) as unknown as TypedDocumentString<InviteRowFragment, unknown>;
export const ViewerDocument = new TypedDocumentString(`
    query Viewer {
  me {
    id
    userId
    username
    name
    email
    teamId
    isAdmin
  }
  teams(first: 100) {
    nodes {
      id
      name
      role
    }
  }
}
    `) as unknown as TypedDocumentString<ViewerQuery, ViewerQueryVariables>;
export const CreateTeamDocument = new TypedDocumentString(`
    mutation CreateTeam($name: String!) {
  createTeam(input: {name: $name}) {
    id
    name
    role
  }
}
    `) as unknown as TypedDocumentString<CreateTeamMutation, CreateTeamMutationVariables>;
export const ApiKeysDocument = new TypedDocumentString(`
    query ApiKeys($teamId: ID) {
  apiKeys(first: 50, teamId: $teamId) {
    nodes {
      ...ApiKeyRow
    }
  }
}
    fragment ApiKeyRow on ApiKey {
  id
  name
  teamId
  role
  createdByUsername
  createdAt
  lastUsedAt
  revokedAt
}`) as unknown as TypedDocumentString<ApiKeysQuery, ApiKeysQueryVariables>;
export const CreateApiKeyDocument = new TypedDocumentString(`
    mutation CreateApiKey($input: CreateApiKeyInput!) {
  createApiKey(input: $input) {
    value
    apiKey {
      ...ApiKeyRow
    }
  }
}
    fragment ApiKeyRow on ApiKey {
  id
  name
  teamId
  role
  createdByUsername
  createdAt
  lastUsedAt
  revokedAt
}`) as unknown as TypedDocumentString<CreateApiKeyMutation, CreateApiKeyMutationVariables>;
export const RevokeApiKeyDocument = new TypedDocumentString(`
    mutation RevokeApiKey($id: ID!) {
  revokeApiKey(id: $id) {
    ...ApiKeyRow
  }
}
    fragment ApiKeyRow on ApiKey {
  id
  name
  teamId
  role
  createdByUsername
  createdAt
  lastUsedAt
  revokedAt
}`) as unknown as TypedDocumentString<RevokeApiKeyMutation, RevokeApiKeyMutationVariables>;
export const SecretsDocument = new TypedDocumentString(`
    query Secrets {
  secrets {
    name
    createdAt
    updatedAt
  }
}
    `) as unknown as TypedDocumentString<SecretsQuery, SecretsQueryVariables>;
export const SetSecretDocument = new TypedDocumentString(`
    mutation SetSecret($name: String!, $value: String!) {
  setSecret(name: $name, value: $value) {
    name
    createdAt
    updatedAt
  }
}
    `) as unknown as TypedDocumentString<SetSecretMutation, SetSecretMutationVariables>;
export const DeleteSecretDocument = new TypedDocumentString(`
    mutation DeleteSecret($name: String!) {
  deleteSecret(name: $name)
}
    `) as unknown as TypedDocumentString<DeleteSecretMutation, DeleteSecretMutationVariables>;
export const BatchListDocument = new TypedDocumentString(`
    query BatchList($first: Int, $after: String) {
  batches(first: $first, after: $after) {
    nodes {
      ...BatchItem
    }
    pageInfo {
      endCursor
      hasNextPage
    }
  }
}
    fragment BatchItem on Batch {
  id
  name
  modelId
  status
  total
  counts {
    queued
    starting
    running
    succeeded
    failed
    canceled
  }
  createdAt
  startedAt
  finishedAt
  runSeconds
}`) as unknown as TypedDocumentString<BatchListQuery, BatchListQueryVariables>;
export const BatchOneDocument = new TypedDocumentString(`
    query BatchOne($id: ID!) {
  batch(id: $id) {
    ...BatchItem
  }
}
    fragment BatchItem on Batch {
  id
  name
  modelId
  status
  total
  counts {
    queued
    starting
    running
    succeeded
    failed
    canceled
  }
  createdAt
  startedAt
  finishedAt
  runSeconds
}`) as unknown as TypedDocumentString<BatchOneQuery, BatchOneQueryVariables>;
export const BatchJobListDocument = new TypedDocumentString(`
    query BatchJobList($id: ID!, $status: JobStatus, $first: Int, $after: String) {
  batchJobs(id: $id, status: $status, first: $first, after: $after) {
    nodes {
      id
      status
      error
      createdAt
    }
    pageInfo {
      endCursor
      hasNextPage
    }
  }
}
    `) as unknown as TypedDocumentString<BatchJobListQuery, BatchJobListQueryVariables>;
export const BatchModelsDocument = new TypedDocumentString(`
    query BatchModels($first: Int) {
  models(first: $first) {
    nodes {
      id
      name
      args {
        name
        type
        optional
      }
    }
  }
}
    `) as unknown as TypedDocumentString<BatchModelsQuery, BatchModelsQueryVariables>;
export const CreateBatchRunDocument = new TypedDocumentString(`
    mutation CreateBatchRun($input: CreateBatchInput!) {
  createBatch(input: $input) {
    id
  }
}
    `) as unknown as TypedDocumentString<CreateBatchRunMutation, CreateBatchRunMutationVariables>;
export const CancelBatchRunDocument = new TypedDocumentString(`
    mutation CancelBatchRun($id: ID!) {
  cancelBatch(id: $id) {
    ...BatchItem
  }
}
    fragment BatchItem on Batch {
  id
  name
  modelId
  status
  total
  counts {
    queued
    starting
    running
    succeeded
    failed
    canceled
  }
  createdAt
  startedAt
  finishedAt
  runSeconds
}`) as unknown as TypedDocumentString<CancelBatchRunMutation, CancelBatchRunMutationVariables>;
export const RetryBatchRunDocument = new TypedDocumentString(`
    mutation RetryBatchRun($id: ID!) {
  retryBatch(id: $id) {
    ...BatchItem
  }
}
    fragment BatchItem on Batch {
  id
  name
  modelId
  status
  total
  counts {
    queued
    starting
    running
    succeeded
    failed
    canceled
  }
  createdAt
  startedAt
  finishedAt
  runSeconds
}`) as unknown as TypedDocumentString<RetryBatchRunMutation, RetryBatchRunMutationVariables>;
export const BatchLiveDocument = new TypedDocumentString(`
    subscription BatchLive($id: ID!) {
  batchUpdated(id: $id) {
    ...BatchItem
  }
}
    fragment BatchItem on Batch {
  id
  name
  modelId
  status
  total
  counts {
    queued
    starting
    running
    succeeded
    failed
    canceled
  }
  createdAt
  startedAt
  finishedAt
  runSeconds
}`) as unknown as TypedDocumentString<BatchLiveSubscription, BatchLiveSubscriptionVariables>;
export const JobListDocument = new TypedDocumentString(`
    query JobList($first: Int, $after: String, $orderBy: JobOrder) {
  jobs(first: $first, after: $after, orderBy: $orderBy) {
    nodes {
      ...JobRow
    }
    pageInfo {
      endCursor
      hasNextPage
    }
  }
}
    fragment JobRow on Job {
  id
  status
  createdAt
  updatedAt
  cost {
    amount
    currency
    final
  }
  deployment {
    id
    name
  }
  model {
    id
    name
  }
}`) as unknown as TypedDocumentString<JobListQuery, JobListQueryVariables>;
export const JobEventsDocument = new TypedDocumentString(`
    subscription JobEvents {
  jobs {
    ...JobRow
  }
}
    fragment JobRow on Job {
  id
  status
  createdAt
  updatedAt
  cost {
    amount
    currency
    final
  }
  deployment {
    id
    name
  }
  model {
    id
    name
  }
}`) as unknown as TypedDocumentString<JobEventsSubscription, JobEventsSubscriptionVariables>;
export const JobPageDocument = new TypedDocumentString(`
    query JobPage($id: ID!) {
  job(id: $id) {
    ...JobDetail
    logTail
    model {
      id
      args {
        name
        type
        description
      }
    }
  }
}
    fragment JobRow on Job {
  id
  status
  createdAt
  updatedAt
  cost {
    amount
    currency
    final
  }
  deployment {
    id
    name
  }
  model {
    id
    name
  }
}
fragment JobDetail on Job {
  ...JobRow
  priority
  queuePosition
  pendingReason
  machineType
  machineCount
  startedAt
  finishedAt
  queueSeconds
  runSeconds
  error
  exitCode
  result
  transitions {
    from
    to
    at
  }
  outputs {
    id
    url
    contentType
    imageName
    size
  }
  deployment {
    id
    name
    args
    modelId
  }
}`) as unknown as TypedDocumentString<JobPageQuery, JobPageQueryVariables>;
export const MediaNameDocument = new TypedDocumentString(`
    query MediaName($id: ID!) {
  mediaAsset(id: $id) {
    id
    imageName
    url
  }
}
    `) as unknown as TypedDocumentString<MediaNameQuery, MediaNameQueryVariables>;
export const JobWatchDocument = new TypedDocumentString(`
    subscription JobWatch($id: ID!) {
  jobUpdated(id: $id) {
    ...JobDetail
  }
}
    fragment JobRow on Job {
  id
  status
  createdAt
  updatedAt
  cost {
    amount
    currency
    final
  }
  deployment {
    id
    name
  }
  model {
    id
    name
  }
}
fragment JobDetail on Job {
  ...JobRow
  priority
  queuePosition
  pendingReason
  machineType
  machineCount
  startedAt
  finishedAt
  queueSeconds
  runSeconds
  error
  exitCode
  result
  transitions {
    from
    to
    at
  }
  outputs {
    id
    url
    contentType
    imageName
    size
  }
  deployment {
    id
    name
    args
    modelId
  }
}`) as unknown as TypedDocumentString<JobWatchSubscription, JobWatchSubscriptionVariables>;
export const JobLogsDocument = new TypedDocumentString(`
    subscription JobLogs($id: ID!) {
  jobLogs(id: $id) {
    line
    stream
  }
}
    `) as unknown as TypedDocumentString<JobLogsSubscription, JobLogsSubscriptionVariables>;
export const CancelJobDocument = new TypedDocumentString(`
    mutation CancelJob($id: ID!) {
  cancelJob(id: $id) {
    id
    status
  }
}
    `) as unknown as TypedDocumentString<CancelJobMutation, CancelJobMutationVariables>;
export const RunDeploymentDocument = new TypedDocumentString(`
    mutation RunDeployment($input: CreateDeploymentInput!) {
  createDeployment(input: $input) {
    id
    job {
      id
    }
  }
}
    `) as unknown as TypedDocumentString<RunDeploymentMutation, RunDeploymentMutationVariables>;
export const MediaListDocument = new TypedDocumentString(`
    query MediaList($first: Int, $after: String, $filter: MediaFilterInput) {
  media(first: $first, after: $after, filter: $filter) {
    nodes {
      ...MediaItem
    }
    pageInfo {
      endCursor
      hasNextPage
    }
  }
}
    fragment MediaItem on MediaAsset {
  id
  url
  imageName
  contentType
  size
  tags
  type
  createdAt
}`) as unknown as TypedDocumentString<MediaListQuery, MediaListQueryVariables>;
export const UpdateMediaTagsDocument = new TypedDocumentString(`
    mutation UpdateMediaTags($id: ID!, $tags: [String!]!) {
  updateMediaTags(id: $id, tags: $tags) {
    ...MediaItem
  }
}
    fragment MediaItem on MediaAsset {
  id
  url
  imageName
  contentType
  size
  tags
  type
  createdAt
}`) as unknown as TypedDocumentString<UpdateMediaTagsMutation, UpdateMediaTagsMutationVariables>;
export const DeleteMediaDocument = new TypedDocumentString(`
    mutation DeleteMedia($id: ID!) {
  deleteMedia(id: $id)
}
    `) as unknown as TypedDocumentString<DeleteMediaMutation, DeleteMediaMutationVariables>;
export const ModelListDocument = new TypedDocumentString(`
    query ModelList($first: Int, $after: String, $filter: ModelFilterInput) {
  models(first: $first, after: $after, filter: $filter) {
    nodes {
      ...ModelCard
    }
    pageInfo {
      endCursor
      hasNextPage
    }
  }
}
    fragment ModelCard on Model {
  id
  name
  description
  tags
  version
  builtin
  likeCount
  followCount
  runCount
  viewerLikes
  viewerFollows
}`) as unknown as TypedDocumentString<ModelListQuery, ModelListQueryVariables>;
export const ModelRunFormDocument = new TypedDocumentString(`
    query ModelRunForm($id: ID!) {
  model(id: $id) {
    ...ModelCard
    args {
      name
      type
      description
      example
      min
      max
      optional
      choices
    }
  }
}
    fragment ModelCard on Model {
  id
  name
  description
  tags
  version
  builtin
  likeCount
  followCount
  runCount
  viewerLikes
  viewerFollows
}`) as unknown as TypedDocumentString<ModelRunFormQuery, ModelRunFormQueryVariables>;
export const LikeModelDocument = new TypedDocumentString(`
    mutation LikeModel($id: ID!) {
  likeModel(id: $id) {
    ...ModelCard
  }
}
    fragment ModelCard on Model {
  id
  name
  description
  tags
  version
  builtin
  likeCount
  followCount
  runCount
  viewerLikes
  viewerFollows
}`) as unknown as TypedDocumentString<LikeModelMutation, LikeModelMutationVariables>;
export const UnlikeModelDocument = new TypedDocumentString(`
    mutation UnlikeModel($id: ID!) {
  unlikeModel(id: $id) {
    ...ModelCard
  }
}
    fragment ModelCard on Model {
  id
  name
  description
  tags
  version
  builtin
  likeCount
  followCount
  runCount
  viewerLikes
  viewerFollows
}`) as unknown as TypedDocumentString<UnlikeModelMutation, UnlikeModelMutationVariables>;
export const FollowModelDocument = new TypedDocumentString(`
    mutation FollowModel($id: ID!) {
  followModel(id: $id) {
    ...ModelCard
  }
}
    fragment ModelCard on Model {
  id
  name
  description
  tags
  version
  builtin
  likeCount
  followCount
  runCount
  viewerLikes
  viewerFollows
}`) as unknown as TypedDocumentString<FollowModelMutation, FollowModelMutationVariables>;
export const UnfollowModelDocument = new TypedDocumentString(`
    mutation UnfollowModel($id: ID!) {
  unfollowModel(id: $id) {
    ...ModelCard
  }
}
    fragment ModelCard on Model {
  id
  name
  description
  tags
  version
  builtin
  likeCount
  followCount
  runCount
  viewerLikes
  viewerFollows
}`) as unknown as TypedDocumentString<UnfollowModelMutation, UnfollowModelMutationVariables>;
export const ModelProductDocument = new TypedDocumentString(`
    query ModelProduct($id: ID!) {
  model(id: $id) {
    id
    visibility
    sharedWith
    secrets
    viewerCanEdit
    versions(first: 20) {
      nodes {
        ...ModelVersionRow
      }
    }
  }
}
    fragment ModelVersionRow on ModelVersion {
  id
  sequence
  container
  command
  machineType
  machineCount
  timeoutSeconds
  secrets
  createdAt
  args {
    name
    type
    format
    optional
    min
    max
    choices
  }
}`) as unknown as TypedDocumentString<ModelProductQuery, ModelProductQueryVariables>;
export const SetModelVisibilityDocument = new TypedDocumentString(`
    mutation SetModelVisibility($id: ID!, $visibility: String!) {
  updateModel(id: $id, input: {visibility: $visibility}) {
    id
    visibility
  }
}
    `) as unknown as TypedDocumentString<SetModelVisibilityMutation, SetModelVisibilityMutationVariables>;
export const TeamPageDocument = new TypedDocumentString(`
    query TeamPage($id: ID!) {
  me {
    id
  }
  team(id: $id) {
    id
    name
    role
    memberCount
    members(first: 50) {
      nodes {
        ...MemberRow
      }
    }
  }
}
    fragment MemberRow on TeamMember {
  userId
  username
  email
  name
  role
  joinedAt
}`) as unknown as TypedDocumentString<TeamPageQuery, TeamPageQueryVariables>;
export const TeamInvitesDocument = new TypedDocumentString(`
    query TeamInvites($id: ID!) {
  team(id: $id) {
    id
    invites(first: 20) {
      nodes {
        ...InviteRow
      }
    }
  }
}
    fragment InviteRow on TeamInvite {
  id
  teamId
  teamName
  email
  username
  role
  status
  expiresAt
  invitedByUsername
  mailState
  mailError
}`) as unknown as TypedDocumentString<TeamInvitesQuery, TeamInvitesQueryVariables>;
export const TeamAuditDocument = new TypedDocumentString(`
    query TeamAudit($id: ID!, $action: String, $actorId: ID) {
  team(id: $id) {
    id
    auditLog(first: 20, action: $action, actorId: $actorId) {
      nodes {
        id
        at
        action
        targetType
        targetId
        details
        actor {
          userId
          via
          apiKeyId
        }
      }
    }
  }
}
    `) as unknown as TypedDocumentString<TeamAuditQuery, TeamAuditQueryVariables>;
export const InviteMemberDocument = new TypedDocumentString(`
    mutation InviteMember($teamId: ID!, $input: InviteToTeamInput!) {
  inviteToTeam(teamId: $teamId, input: $input) {
    token
    inviteUrl
    invite {
      ...InviteRow
    }
  }
}
    fragment InviteRow on TeamInvite {
  id
  teamId
  teamName
  email
  username
  role
  status
  expiresAt
  invitedByUsername
  mailState
  mailError
}`) as unknown as TypedDocumentString<InviteMemberMutation, InviteMemberMutationVariables>;
export const RevokeTeamInviteDocument = new TypedDocumentString(`
    mutation RevokeTeamInvite($teamId: ID!, $inviteId: ID!) {
  revokeInvite(teamId: $teamId, inviteId: $inviteId) {
    id
  }
}
    `) as unknown as TypedDocumentString<RevokeTeamInviteMutation, RevokeTeamInviteMutationVariables>;
export const ChangeMemberRoleDocument = new TypedDocumentString(`
    mutation ChangeMemberRole($teamId: ID!, $userId: ID!, $role: TeamRole!) {
  setTeamMemberRole(teamId: $teamId, userId: $userId, role: $role) {
    ...MemberRow
  }
}
    fragment MemberRow on TeamMember {
  userId
  username
  email
  name
  role
  joinedAt
}`) as unknown as TypedDocumentString<ChangeMemberRoleMutation, ChangeMemberRoleMutationVariables>;
export const RemoveMemberDocument = new TypedDocumentString(`
    mutation RemoveMember($teamId: ID!, $userId: ID!) {
  removeTeamMember(teamId: $teamId, userId: $userId)
}
    `) as unknown as TypedDocumentString<RemoveMemberMutation, RemoveMemberMutationVariables>;
export const LeaveTeamDocument = new TypedDocumentString(`
    mutation LeaveTeam($teamId: ID!) {
  leaveTeam(teamId: $teamId)
}
    `) as unknown as TypedDocumentString<LeaveTeamMutation, LeaveTeamMutationVariables>;
export const InviteByTokenDocument = new TypedDocumentString(`
    query InviteByToken($token: String!) {
  inviteByToken(token: $token) {
    ...InviteRow
  }
}
    fragment InviteRow on TeamInvite {
  id
  teamId
  teamName
  email
  username
  role
  status
  expiresAt
  invitedByUsername
  mailState
  mailError
}`) as unknown as TypedDocumentString<InviteByTokenQuery, InviteByTokenQueryVariables>;
export const AcceptTeamInviteDocument = new TypedDocumentString(`
    mutation AcceptTeamInvite($token: String!) {
  acceptInvite(input: {token: $token}) {
    member {
      role
    }
  }
}
    `) as unknown as TypedDocumentString<AcceptTeamInviteMutation, AcceptTeamInviteMutationVariables>;
export const DeclineTeamInviteDocument = new TypedDocumentString(`
    mutation DeclineTeamInvite($token: String!) {
  declineInvite(input: {token: $token}) {
    invite {
      status
    }
  }
}
    `) as unknown as TypedDocumentString<DeclineTeamInviteMutation, DeclineTeamInviteMutationVariables>;
export const MonthUsageDocument = new TypedDocumentString(`
    query MonthUsage {
  quota {
    maxRunningJobs
    runningJobs
    machines {
      machineType
      limit
      inUse
    }
  }
  budget {
    monthlyLimit
    currency
    spent
    committed
    action
  }
  usage(granularity: DAY) {
    currency
    total
    period {
      start
      end
    }
    series {
      start
      computeSeconds
      computeAmount
      storageByteSeconds
      storageAmount
      total
    }
    models {
      modelId
      name
      jobs
      seconds
      amount
    }
    storage {
      byteSeconds
      gbMonths
      amount
    }
  }
}
    `) as unknown as TypedDocumentString<MonthUsageQuery, MonthUsageQueryVariables>;