import { ApiKey } from '../auth/api-key.entity';
import { Model, ModelFollow, ModelLike, ModelVersion } from '../models/model.entity';
import { Secret } from '../secrets/secret.entity';
import { DevAccount, OidcProviderState } from '../auth/dev-issuer.entity';
import { LoginAttempt, LoginSession, SessionToken } from '../auth/session.entity';
import { BridgeApiKey, BridgeUser, DendriteInstance, Matterbridge } from '../chat-bridge/chat-bridge.entity';
import { AuditRecord, Team, TeamInvite, TeamMember } from '../teams/team.entity';
import { CallRecord, NumberAssignment } from '../telephony/telephony.entity';
import { User } from '../users/user.entity';
import { Batch } from '../batches/batch.entity';
import { Deployment } from '../jobs/deployment.entity';
import { Job, JobLogBatch, JobTransition, OwnerUsage, WorkerInstance } from '../jobs/job.entity';
import { OwnerQuota } from '../quotas/quota.entity';
import { MediaAsset, MediaTag } from '../media/media.entity';
import {
  Budget,
  BudgetNotice,
  MediaStorageInterval,
  SpendDay,
  StorageDay,
  StorageOpenDay,
} from '../billing/billing.entity';
import { WebhookAttempt, WebhookDelivery, WebhookSecret } from '../webhooks/webhook.entity';
import { IdempotencyKey } from '../idempotency/idempotency.entity';
import { RateLimitCounter } from '../rate-limits/rate-limit.entity';
import { PersistedDocument } from '../documents/document.entity';

/** Every entity of the service; each module appends its own here. */
export const entities = [
  User,
  Team,
  TeamMember,
  TeamInvite,
  AuditRecord,
  ApiKey,
  MediaAsset,
  MediaTag,
  Deployment,
  Batch,
  Job,
  OwnerUsage,
  OwnerQuota,
  JobTransition,
  WorkerInstance,
  Model,
  ModelLike,
  ModelFollow,
  NumberAssignment,
  CallRecord,
  LoginSession,
  LoginAttempt,
  DevAccount,
  OidcProviderState,
  BridgeUser,
  BridgeApiKey,
  DendriteInstance,
  Matterbridge,
  MediaStorageInterval,
  SpendDay,
  StorageDay,
  StorageOpenDay,
  Budget,
  BudgetNotice,
  RateLimitCounter,
  PersistedDocument,
  SessionToken,
  // issue 18: webhooks, stored log lines
  JobLogBatch,
  WebhookSecret,
  WebhookDelivery,
  WebhookAttempt,
  IdempotencyKey,
  // issue 32: models as products
  ModelVersion,
  Secret,
];
