import type { MikroORM } from '@mikro-orm/postgresql';
import { DevAccountService } from '../auth/dev-account.service';
import { devIssuerUrl, loadDevSigningKey } from '../auth/dev-issuer';
import { discoveryVerifier, localVerifier, type TokenVerifier } from '../auth/token-verifier';
import { createBridge, type Bridge } from '../chat-bridge/chat-bridge.app';
import type { Config } from '../config';
import type { Logger } from '../common/logger';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../db/embedded-postgres';
import { migrate } from '../db/migrate';
import { databaseAnswers, openOrm, type OrmOptions } from '../db/orm';
import { entities } from './entities';
import { priceListGaps } from '../common/price-list';
import { BUILTIN_MODELS, seedBuiltinModels } from '../models/model.seed';
import { cdrRoutes } from '../telephony/cdr.routes';
import { EventBus } from '../events/event-bus';
import { createExecutor } from '../executors/executor.factory';
import type { JobRunner } from '../jobs/job.runner';
import { Metrics } from '../metrics/metrics';
import { metricsServer, type MetricsServer } from '../metrics/metrics.server';
import { createApp, type App, type AppDeps } from './app';
import { createServices, type Services } from './services';
import { createStorage } from '../storage/storage.factory';
import { freeBytes } from '../storage/storage.space';
import type { TaskRunner } from '../tasks/task.runner';
import { workerTasks } from './worker-tasks';

export interface Runtime {
  config: Config;
  orm: MikroORM;
  services: Services;
  app: App;
  /** The chat bridge's listener and processes, when the `bridge` role runs. */
  bridge: Bridge | null;
  /** The job worker, when the `worker` role runs. */
  runner: JobRunner | null;
  metrics: Metrics;
  /** `/metrics`, `/healthz`, `/readyz` on `METRICS_PORT` (any role); listening is left to the caller. */
  metricsServer: MetricsServer;
  /**
   * Stops in reverse order of start: HTTP, bridge processes, running jobs and the job worker,
   * external connections, the event bus, the database pool, embedded PostgreSQL.
   */
  stop(): Promise<void>;
}

export interface RuntimeOptions {
  /** Sees every SQL statement (tests count them). */
  onQuery?: OrmOptions['onQuery'];
  /** Changes the app's declared HTTP pipeline (tests add a stage). */
  editPipeline?: AppDeps['editPipeline'];
}

/** Starts everything the configuration asks for; listening is left to the caller. */
export async function startRuntime(
  config: Config,
  log: Logger,
  options: RuntimeOptions = {},
): Promise<Runtime> {
  let embedded: EmbeddedDatabase | undefined;
  let orm: MikroORM | undefined;
  let bus: EventBus | undefined;
  let runner: JobRunner | undefined;
  let tasks: TaskRunner | undefined;
  try {
    let databaseUrl = config.databaseUrl;
    if (!databaseUrl) {
      embedded = await startEmbeddedPostgres(config.dataDir, log);
      databaseUrl = embedded.url;
    }
    warnAboutMachineTypes(config, log);
    // The service's schema and the job queue's (every role needs it: creating a deployment
    // enqueues), migrated in a worker thread while this one opens the ORM (metadata discovery and a
    // first connection, which do not read the schema).
    const [migrated, opened] = await Promise.allSettled([
      migrate({ databaseUrl, queryTimeoutMs: config.databaseQueryTimeoutMs }, log),
      openOrm({
        clientUrl: databaseUrl,
        entities,
        onQuery: options.onQuery,
        queryTimeoutMs: config.databaseQueryTimeoutMs,
        migrate: false,
      }),
    ]);
    if (opened.status === 'fulfilled') orm = opened.value; // the catch below closes it if migrating failed
    if (migrated.status === 'rejected') throw migrated.reason;
    if (!orm) throw (opened as PromiseRejectedResult).reason;
    log.info('database schema up to date');
    await seedBuiltinModels(orm);
    bus = new EventBus(databaseUrl, log, config.databaseQueryTimeoutMs);
    await bus.start();
    const ormOpen = orm;
    const storage = await createStorage(config, log);
    const metrics = new Metrics(
      {
        orm,
        freeSpace: { media: () => storage.freeBytes(), jobs: () => freeBytes(config.jobsDir) },
        worker: () =>
          runner
            ? {
                instanceId: runner.instanceId,
                executor: config.executor,
                slots: config.localExecutorConcurrency,
              }
            : null,
      },
      log,
    );
    bus.onReconnect(() => metrics.eventBusReconnects.inc());
    const metricsEndpoint = metricsServer(
      metrics,
      () => databaseAnswers(ormOpen, Math.min(2000, config.databaseQueryTimeoutMs)),
      log,
    );

    let verifier: TokenVerifier;
    const publicRoutes = [];
    if (config.oidcIssuer) {
      verifier = discoveryVerifier({
        issuer: config.oidcIssuer,
        audience: config.oidcAudience,
        cooldownSeconds: config.oidcJwksCooldownSeconds,
      });
    } else {
      const issuer = devIssuerUrl(config.publicUrl);
      const key = await loadDevSigningKey(config.dataDir);
      verifier = localVerifier({ issuer, audience: config.oidcAudience }, { keys: [key.publicJwk] });
      const accounts = new DevAccountService(orm);
      // Loaded only without OIDC_ISSUER: oidc-provider and its Koa stack are about 6 MiB of heap
      // and 20 MiB resident that a process behind a real issuer would carry for nothing.
      /* eslint-disable @typescript-eslint/no-require-imports */
      const { createDevProvider } =
        require('../auth/dev-issuer.provider') as typeof import('../auth/dev-issuer.provider');
      const { devIssuerRoutes } =
        require('../auth/dev-issuer.routes') as typeof import('../auth/dev-issuer.routes');
      /* eslint-enable @typescript-eslint/no-require-imports */
      const provider = createDevProvider({ config, key, orm, accounts });
      publicRoutes.push({
        path: new URL(issuer).pathname,
        router: devIssuerRoutes(provider, accounts, config.publicUrl.startsWith('https:')),
      });
      log.warn(
        { issuer, signIn: `${config.publicUrl}/api/v1/auth/login` },
        'OIDC_ISSUER is unset: using the built-in development identity provider (not for production)',
      );
    }
    const services = createServices({ config, orm, verifier, storage, bus, log, metrics });
    publicRoutes.push({ path: '/api/v2/cdr', router: cdrRoutes(config, services.telephony) });
    const app = await createApp({
      config,
      log,
      orm,
      services,
      publicRoutes,
      metrics,
      editPipeline: options.editPipeline,
    });
    const sweeper = config.roles.includes('worker') ? startSweeper(services, log) : undefined;
    if (config.roles.includes('worker')) {
      // Loaded by the worker role alone: graphile-worker's runner is heap an API process would keep for nothing.
      /* eslint-disable @typescript-eslint/no-require-imports */
      const { JobRunner } = require('../jobs/job.runner') as typeof import('../jobs/job.runner');
      const { TaskRunner } = require('../tasks/task.runner') as typeof import('../tasks/task.runner');
      /* eslint-enable @typescript-eslint/no-require-imports */
      runner = new JobRunner(
        orm,
        services.jobs,
        services.deployments,
        services.claims,
        services.media,
        createExecutor(config, log),
        services.events,
        log,
        {
          databaseUrl,
          concurrency: config.workerConcurrency,
          queryTimeoutMs: config.databaseQueryTimeoutMs,
          clusterRetrySeconds: config.clusterRetrySeconds,
          jobsDir: config.jobsDir,
        },
        services.secrets,
      );
      await runner.start();
      tasks = new TaskRunner(workerTasks(config, orm, app.schema, services, log), log, {
        databaseUrl,
        concurrency: config.webhookConcurrency,
        queryTimeoutMs: config.databaseQueryTimeoutMs,
        registerWorker: runner.registerQueueWorker,
      });
      await tasks.start();
      await services.batchCompletion.start();
    }
    const bridge = config.roles.includes('bridge') ? await createBridge({ config, log, orm }) : null;
    const openOrmRef = orm;
    const openBus = bus;
    const openRunner = runner;
    const openTasks = tasks;
    return {
      config,
      orm,
      services,
      app,
      bridge,
      runner: openRunner ?? null,
      metrics,
      metricsServer: metricsEndpoint,
      stop: async () => {
        clearInterval(sweeper);
        await Promise.all([app.close(), bridge?.close(), metricsEndpoint.close()]);
        services.batchCompletion.stop();
        await openTasks?.stop();
        await openRunner?.stop();
        await services.telephony.close();
        await openBus.stop();
        await openOrmRef.close(true);
        await embedded?.stop();
      },
    };
  } catch (err) {
    await tasks?.stop().catch(() => undefined);
    await runner?.stop().catch(() => undefined);
    await bus?.stop();
    await orm?.close(true).catch(() => undefined);
    await embedded?.stop().catch(() => undefined);
    throw err;
  }
}

/**
 * The price list and MACHINE_TYPES_FILE should name the same machine types (docs/executors.md);
 * the built-in models need theirs defined to run.
 */
function warnAboutMachineTypes(config: Config, log: Logger): void {
  const types = config.machineTypes;
  if (!types) return;
  const { pricedNotDefined, definedNotPriced } = priceListGaps(config.prices, types.keys());
  if (pricedNotDefined.length)
    log.warn(
      { machineTypes: pricedNotDefined },
      'machine types priced (PRICES_FILE) but not defined (MACHINE_TYPES_FILE): no model can use them',
    );
  if (definedNotPriced.length)
    log.warn(
      { machineTypes: definedNotPriced },
      'machine types defined (MACHINE_TYPES_FILE) but not priced (PRICES_FILE): billed at the default price',
    );
  const builtin = [...new Set(BUILTIN_MODELS.map((m) => m.machineType!))].filter((t) => !types.has(t));
  if (builtin.length)
    log.warn(
      { machineTypes: builtin },
      'the built-in models use machine types MACHINE_TYPES_FILE does not define: they cannot run',
    );
}

const SWEEP_INTERVAL_MS = 15 * 60_000;

/** Finishes uploads and deletes that a crashed process left behind: at start, then periodically. */
function startSweeper(services: Services, log: Logger): NodeJS.Timeout {
  const sweep = () => {
    void services.media
      .sweep()
      .then((n) => n && log.info({ removed: n }, 'swept abandoned media'))
      .catch((err) => log.warn({ err }, 'media sweep failed'));
    void services.idempotency.sweep().catch((err) => log.warn({ err }, 'idempotency key sweep failed'));
    // Audit records older than AUDIT_RETENTION_DAYS.
    void services.audit.sweep().catch((err) => log.warn({ err }, 'audit log sweep failed'));
  };
  void sweep();
  return setInterval(sweep, SWEEP_INTERVAL_MS).unref();
}
