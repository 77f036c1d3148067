import type { MikroORM } from '@mikro-orm/postgresql';
import { ApiKeyService } from '../auth/api-key.service';
import { BillingService } from '../billing/billing.service';
import { Authenticator } from '../auth/authenticator';
import { LoginService } from '../auth/login.service';
import { openIdClient } from '../auth/oidc.client';
import { SessionService } from '../auth/session.service';
import type { TokenVerifier } from '../auth/token-verifier';
import type { Config } from '../config';
import { DeploymentService } from '../deployments/deployment.service';
import { RateLimit } from '../rate-limits/rate-limiter';
import type { EventBus } from '../events/event-bus';
import { JobEvents } from '../jobs/job.events';
import { JobLive } from '../jobs/job.live';
import { JobLifecycle } from '../jobs/job.lifecycle';
import { JobService } from '../jobs/job.service';
import { JobWaiter } from '../jobs/job.wait';
import { JobHistory } from '../jobs/job.history';
import type { Metrics } from '../metrics/metrics';
import type { Logger } from '../common/logger';
import { MediaService } from '../media/media.service';
import type { Storage } from '../storage/storage.port';
import { ModelService } from '../models/model.service';
import { AuditLog } from '../teams/audit.service';
import { TeamService } from '../teams/team.service';
import { createCallOriginator } from '../telephony/call-originator.factory';
import { callLinkLimit, TelephonyService } from '../telephony/telephony.service';
import { UserService } from '../users/user.service';
import { WebhookService } from '../webhooks/webhook.service';
import { IdempotencyService } from '../idempotency/idempotency.service';

/** The service singletons of one process. Each forks its own EntityManager per call. */
export interface ServiceDeps {
  /** The process's metrics; none in scripts. */
  metrics?: Metrics;
  config: Config;
  orm: MikroORM;
  verifier: TokenVerifier;
  storage: Storage;
  bus: EventBus;
  log: Logger;
}

export function createServices({ config, orm, verifier, storage, bus, log, metrics }: ServiceDeps) {
  const lifecycle = new JobLifecycle(log, metrics);
  const users = new UserService(orm);
  const audit = new AuditLog(orm, config.auditRetentionDays);
  const teams = new TeamService(orm, audit, {
    publicUrl: config.publicUrl,
    inviteTtlHours: config.teamInviteTtlHours,
    mail: config.smtpUrl !== undefined,
  });
  const apiKeys = new ApiKeyService(orm, teams, audit);
  const sessions = new SessionService(orm, config.sessionTtlSeconds, config.sessionTokenTtlSeconds);
  const authenticator = new Authenticator(config, verifier, users, apiKeys, sessions);
  const identityProvider = openIdClient({
    issuer: verifier.issuer,
    clientId: config.oidcClientId,
    clientSecret: config.oidcClientSecret,
    clientAuthMethod: config.oidcClientAuthMethod,
    scopes: config.oidcScopes,
    audience: config.oidcAudience,
    timeoutSeconds: config.oidcTimeoutSeconds,
  });
  const login = new LoginService(config.publicUrl, identityProvider, verifier, users, sessions, teams);
  const media = new MediaService(
    orm,
    storage,
    {
      cdnUrl: config.cdnUrl,
      maxUploadBytes: config.maxUploadBytes,
      onUpload: metrics
        ? (outcome, bytes, seconds) => {
            metrics.uploadBytes.inc(bytes);
            metrics.uploadDuration.observe({ outcome }, seconds);
          }
        : undefined,
    },
    log,
    audit,
  );
  const models = new ModelService(orm, config.machineTypes, audit);
  const telephony = new TelephonyService(
    orm,
    config,
    createCallOriginator(config, log),
    callLinkLimit(orm, config),
  );
  const jobs = new JobService(orm, lifecycle, audit);
  // The process's one listener for job events: every live consumer listens to it, none to the bus.
  const events = new JobEvents(bus, jobs, log);
  const webhooks = new WebhookService(
    orm,
    {
      allowHttp: config.webhookAllowHttp,
      allowPrivate: config.webhookAllowPrivate,
    },
    audit,
  );
  const deployments = new DeploymentService(
    orm,
    config,
    models,
    media,
    new JobWaiter(events, jobs),
    webhooks,
    config.rateLimitDeploymentsPerMinute > 0
      ? new RateLimit(orm, {
          name: 'deployments',
          points: config.rateLimitDeploymentsPerMinute,
          windowSeconds: 60,
        })
      : null,
    lifecycle,
    audit,
  );
  const live = new JobLive(events, jobs);
  const billing = new BillingService(orm, config.prices);
  const idempotency = new IdempotencyService(orm);
  const history = new JobHistory(orm);
  return {
    users,
    audit,
    teams,
    apiKeys,
    sessions,
    authenticator,
    login,
    media,
    models,
    telephony,
    jobs,
    deployments,
    events,
    live,
    billing,
    webhooks,
    idempotency,
    history,
    bus,
  };
}

export type Services = ReturnType<typeof createServices>;
