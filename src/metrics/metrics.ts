import type { MikroORM } from '@mikro-orm/postgresql';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Logger } from '../common/logger';

/** What the scrape-time gauges read; each part is optional (a role may lack it). */
export interface MetricSources {
  orm: MikroORM;
  /** The worker of this process: its id (jobs it holds) and its slots. */
  worker?: () => { instanceId: string; executor: string; slots: number } | null;
  /** Bytes free per store (`media`, `jobs`), read when scraped; null: the store cannot tell. */
  freeSpace?: Record<string, () => Promise<number | null>>;
}

/** Seconds, from a few milliseconds (in-process answers) to minutes (long uploads). */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
/** Seconds a job waits or runs: up to a day. */
const JOB_BUCKETS = [0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 86400];
/** Distinct GraphQL operation names kept as labels; others are counted as `(other)`. */
const MAX_OPERATION_NAMES = 200;

/**
 * The Prometheus metrics of one service process (docs/operations.md lists each). A registry per
 * process, not prom-client's global one, so that several runtimes in one process (tests) keep
 * apart. Gauges of shared state (jobs, the queue) are read from the database when scraped.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP requests by route pattern, method and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly graphqlDuration = new Histogram({
    name: 'graphql_operation_duration_seconds',
    help: 'GraphQL operations over HTTP by operation name, type and outcome',
    labelNames: ['operation', 'type', 'outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly subscriptionsOpen = new Gauge({
    name: 'graphql_subscriptions_open',
    help: 'GraphQL subscriptions open on this process',
    registers: [this.registry],
  });
  readonly subscriptionSocketsTooSlow = new Counter({
    name: 'graphql_subscription_sockets_too_slow_total',
    help: 'Subscription sockets closed because their unsent bytes passed SUBSCRIPTION_MAX_BUFFER_BYTES',
    registers: [this.registry],
  });
  readonly jobsCreated = new Counter({
    name: 'jobs_created_total',
    help: 'Jobs created by this process',
    registers: [this.registry],
  });
  readonly jobsEnded = new Counter({
    name: 'jobs_ended_total',
    help: 'Jobs this process moved to an end state, by state',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });
  readonly dispatchLatency = new Histogram({
    name: 'job_dispatch_latency_seconds',
    help: 'From a job created to its program running, for jobs this process started',
    buckets: JOB_BUCKETS,
    registers: [this.registry],
  });
  readonly runDuration = new Histogram({
    name: 'job_run_duration_seconds',
    help: 'Run time of jobs that ended on this process, by end state',
    labelNames: ['state'] as const,
    buckets: JOB_BUCKETS,
    registers: [this.registry],
  });
  readonly uploadBytes = new Counter({
    name: 'upload_bytes_total',
    help: 'Bytes of uploads stored by this process',
    registers: [this.registry],
  });
  readonly uploadDuration = new Histogram({
    name: 'upload_duration_seconds',
    help: 'Uploads from their first byte to stored (or refused), by outcome',
    labelNames: ['outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly eventBusReconnects = new Counter({
    name: 'event_bus_reconnects_total',
    help: 'Reconnections of the LISTEN/NOTIFY event bus connection',
    registers: [this.registry],
  });
  private readonly operationNames = new Set<string>();

  constructor(
    private readonly sources: MetricSources,
    private readonly log: Logger,
  ) {
    collectDefaultMetrics({ register: this.registry });
    this.databaseGauges();
    this.storageGauges();
  }

  /** An operation name as a label: bounded, since clients choose the names. */
  operationLabel(name: string | null | undefined): string {
    if (!name) return '(anonymous)';
    if (this.operationNames.has(name)) return name;
    if (this.operationNames.size >= MAX_OPERATION_NAMES) return '(other)';
    this.operationNames.add(name);
    return name;
  }

  /** The exposition text and its content type. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  private storageGauges(): void {
    const stores = Object.entries(this.sources.freeSpace ?? {});
    new Gauge({
      name: 'storage_free_bytes',
      help: 'Bytes free in each store on local disk (media: DATA_DIR/media; jobs: JOBS_DIR); none for S3',
      labelNames: ['store'] as const,
      registers: [this.registry],
      collect: async function () {
        this.reset();
        for (const [store, free] of stores) {
          const bytes = await free();
          if (bytes !== null) this.set({ store }, bytes);
        }
      },
    });
  }

  private databaseGauges(): void {
    const { orm } = this.sources;
    const registers = [this.registry];
    const read = async <T>(what: string, sql: string, params: unknown[] = []): Promise<T[] | null> => {
      try {
        return await orm.em.fork().getConnection().execute<T[]>(sql, params);
      } catch (err) {
        this.log.debug({ err, what }, 'metrics: database not readable');
        return null;
      }
    };
    new Gauge({
      name: 'jobs',
      help: 'Jobs not yet ended, by state (the whole service: read from the database)',
      labelNames: ['state'] as const,
      registers,
      collect: async function () {
        const rows = await read<{ status: string; n: number }>(
          'jobs',
          `select status, count(*)::int as n from jobs where status in ('queued', 'starting', 'running') group by status`,
        );
        if (!rows) return;
        this.reset();
        for (const state of ['queued', 'starting', 'running'])
          this.set({ state }, rows.find((r) => r.status === state)?.n ?? 0);
      },
    });
    const queue = () =>
      read<{ depth: number; oldest: number }>(
        'queue',
        `select count(*)::int as depth, coalesce(extract(epoch from now() - min(created_at)), 0)::float8 as oldest
         from jobs where status = 'queued'`,
      );
    new Gauge({
      name: 'job_queue_depth',
      help: 'Jobs waiting for a worker (the whole service)',
      registers,
      collect: async function () {
        const [row] = (await queue()) ?? [];
        if (row) this.set(row.depth);
      },
    });
    new Gauge({
      name: 'job_queue_oldest_age_seconds',
      help: 'How long the oldest queued job has waited; 0 when none waits',
      registers,
      collect: async function () {
        const [row] = (await queue()) ?? [];
        if (row) this.set(row.oldest);
      },
    });
    const worker = this.sources.worker;
    new Gauge({
      name: 'executor_slots',
      help: "Jobs this process's worker runs at once at most, by executor",
      labelNames: ['executor'] as const,
      registers,
      collect: function () {
        const w = worker?.();
        if (w) this.set({ executor: w.executor }, w.slots);
      },
    });
    new Gauge({
      name: 'executor_slots_in_use',
      help: "Jobs this process's worker is starting or running, by executor",
      labelNames: ['executor'] as const,
      registers,
      collect: async function () {
        const w = worker?.();
        if (!w) return;
        const rows = await read<{ n: number }>(
          'slots',
          `select count(*)::int as n from jobs where worker_id = ? and status in ('starting', 'running')`,
          [w.instanceId],
        );
        if (rows) this.set({ executor: w.executor }, rows[0].n);
      },
    });
    new Gauge({
      name: 'db_pool_connections',
      help: 'The database pool of this process: connections used, free, and acquisitions waiting',
      labelNames: ['state'] as const,
      registers,
      collect: function () {
        const pool = (orm.em.getKnex().client as { pool?: TarnPool }).pool;
        if (!pool) return;
        this.set({ state: 'used' }, pool.numUsed());
        this.set({ state: 'free' }, pool.numFree());
        this.set({ state: 'pending' }, pool.numPendingAcquires());
      },
    });
  }
}

/** The part of knex's pool (tarn) the gauge reads. */
interface TarnPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
}
