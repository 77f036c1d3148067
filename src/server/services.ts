import { BatchService } from '../batches/batch.service';
import { BatchStore } from '../batches/batch.store';
import { BatchLive } from '../batches/batch.live';
import { BatchResults } from '../batches/batch.results';
import { BatchCompletion } from '../batches/batch.webhook';
import type { MikroORM } from '@mikro-orm/postgresql';
import { ApiKeyService } from '../auth/api-key.service';
import { BillingService } from '../billing/billing.service';
import { spendPart } from '../billing/billing.spend';
import { BudgetService } from '../billing/budget.service';
import { DEFAULT_PRICES, type PriceList } from '../common/price-list';
import { Authenticator } from '../auth/authenticator';
import { LoginService } from '../auth/login.service';
import { openIdClient } from '../auth/oidc.client';
import { SessionService } from '../auth/session.service';
import type { TokenVerifier } from '../auth/token-verifier';
import type { Config } from '../config';
import { DeploymentService } from '../jobs/deployment.service';
import { RateLimit } from '../rate-limits/rate-limiter';
import type { EventBus } from '../events/event-bus';
import { JobEvents } from '../jobs/job.events';
import { JobLive } from '../jobs/job.live';
import { JobLifecycle } from '../jobs/job.lifecycle';
import { JobService } from '../jobs/job.service';
import { LocalClaims } from '../jobs/job.claim';
import { JobQueries } from '../jobs/job.queries';
import { JobStore } from '../jobs/job.store';
import type { JobStatementParts } from '../jobs/job.statement-parts.port';
import { JobWaiter } from '../jobs/job.wait';
import { JobHistory } from '../jobs/job.history';
import type { Metrics } from '../metrics/metrics';
import type { Logger } from '../common/logger';
import { MediaService } from '../media/media.service';
import type { Storage } from '../storage/storage.port';
import { ModelService, runCountPart } from '../models/model.service';
import { SecretService } from '../secrets/secret.service';
import { QuotaService } from '../quotas/quota.service';
import { loadSealingKey, SecretBox } from '../common/sealing';
import { AppError } from '../common/errors';
import { AuditLog } from '../teams/audit.service';
import { InviteService } from '../teams/team.invites';
import { TeamService } from '../teams/team.service';
import { createCallOriginator } from '../telephony/call-originator.factory';
import { callLinkLimit, TelephonyService } from '../telephony/telephony.service';
import { UserService } from '../users/user.service';
import { WebhookService } from '../webhooks/webhook.service';
import { webhookJobParts } from '../webhooks/webhook.sql';
import { IdempotencyService } from '../idempotency/idempotency.service';

/**
 * What other modules add to the job lifecycle's statements (job.statement-parts.port.ts): a
 * model's run count, webhook messages, a team's audit records (none without `audit`), and the
 * spend rollup and budget thresholds of jobs that end (priced with `spend.prices`).
 */
export function jobStatementParts(
  audit: AuditLog | null,
  spend: { prices: PriceList; mail: boolean } = { prices: DEFAULT_PRICES, mail: false },
): JobStatementParts {
  return {
    created: [runCountPart],
    ...webhookJobParts,
    ended: spendPart(spend.prices, { mail: spend.mail }),
    acted: (caller, action, rows) => audit?.statementPart(caller, action, rows) ?? null,
  };
}

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
  const teams = new TeamService(orm, audit);
  const invites = new InviteService(orm, audit, teams, {
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
    // The built-in provider names its own resource (dev-issuer.provider.ts).
    audience: config.oidcIssuer ? config.oidcAudience : undefined,
    audienceParameters: config.oidcAudienceParameters,
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
  const secrets = new SecretService(orm, sealingBox(config, log), audit);
  const telephony = new TelephonyService(
    orm,
    config,
    createCallOriginator(config, log),
    callLinkLimit(orm, config),
  );
  const jobStore = new JobStore(
    orm,
    jobStatementParts(audit, { prices: config.prices, mail: config.smtpUrl !== undefined }),
    {
      halfLifeSeconds: config.governance.fairShareHalfLifeHours * 3600,
      maxRunningJobs: config.governance.maxRunningJobs,
      maxMachines: config.governance.maxMachines,
    },
  );
  const jobQueries = new JobQueries(orm);
  // The free slots of this process's worker (if it has one), where jobs created here are claimed.
  const claims = new LocalClaims();
  const jobs = new JobService(jobStore, jobQueries, lifecycle, config.prices);
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
  // Deployments per principal per minute: a batch takes one, as a single deployment does.
  const deploymentLimit =
    config.rateLimitDeploymentsPerMinute > 0
      ? new RateLimit(orm, {
          name: 'deployments',
          points: config.rateLimitDeploymentsPerMinute,
          windowSeconds: 60,
        })
      : null;
  const budgets = new BudgetService(orm, config.prices, webhooks, audit);
  const deployments = new DeploymentService(
    jobStore,
    jobQueries,
    orm,
    config,
    models,
    media,
    new JobWaiter(events, jobs),
    webhooks,
    claims,
    deploymentLimit,
    lifecycle,
    secrets,
    budgets,
  );
  const batchStore = new BatchStore(orm);
  const batches = new BatchService(
    batchStore,
    jobStore,
    deployments,
    jobs,
    media,
    webhooks,
    config,
    deploymentLimit,
    lifecycle,
  );
  const live = new JobLive(events, jobs);
  const batchLive = new BatchLive(events, batches, batchStore, log);
  const batchResults = new BatchResults(orm, batches, storage, media.baseUrl);
  const batchCompletion = new BatchCompletion(orm, events, batches, batchStore, log);
  const billing = new BillingService(orm, config.prices);
  const idempotency = new IdempotencyService(orm);
  const history = new JobHistory(orm);
  return {
    users,
    audit,
    teams,
    invites,
    apiKeys,
    sessions,
    authenticator,
    login,
    media,
    models,
    secrets,
    quotas: new QuotaService(orm, config.governance),
    telephony,
    jobs,
    deployments,
    batches,
    batchLive,
    batchResults,
    batchCompletion,
    claims,
    events,
    live,
    billing,
    budgets,
    webhooks,
    idempotency,
    history,
    bus,
  };
}

export type Services = ReturnType<typeof createServices>;

/**
 * The sealing box of owners' secrets, made on first use. In production a key generated per host
 * would seal what another host cannot open, so there SEALING_KEY (or BRIDGE_SECRET_KEY) is needed
 * and the secrets answer 503 without it (docs/secrets.md).
 */
function sealingBox(config: Config, log: Logger): () => Promise<SecretBox> {
  let box: Promise<SecretBox> | undefined;
  return () => {
    if (config.nodeEnv === 'production' && !config.sealingKey)
      return Promise.reject(
        new AppError('UNAVAILABLE', 'secrets are unavailable: the service has no SEALING_KEY configured'),
      );
    box ??= loadSealingKey(config, log).then((key) => new SecretBox(key));
    return box;
  };
}
