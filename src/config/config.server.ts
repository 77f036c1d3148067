import path from 'node:path';
import type { Parser } from './config.parser';

/** The service itself: its roles, listeners and URLs, data, database, API limits and operability. */

export type Role = 'api' | 'worker' | 'bridge';

export interface ServerConfig {
  nodeEnv: 'development' | 'production' | 'test';
  logLevel: string;
  host: string;
  port: number;
  publicUrl: string;
  cdnUrl: string;
  dataDir: string;
  databaseUrl: string | undefined;
  /** The web app's build (`npm run build:web`), served at `/`. */
  webDir: string;
  apiKeyHeader: string;
  storage: 'local' | 's3';
  s3Bucket: string | undefined;
  s3Endpoint: string | undefined;
  s3Region: string | undefined;
  roles: readonly Role[];
  maxUploadBytes: number;
  maxBodyBytes: number;
  adminSubjects: readonly string[];
  graphqlIntrospection: boolean;
  graphqlIde: boolean;
  shutdownTimeoutMs: number;
  /** How often a websocket's credential is checked again (revoked keys, expired tokens, removed members). */
  subscriptionAuthRecheckSeconds: number;
  /** Unsent bytes a subscription socket may hold before it is closed as too slow (4413). */
  subscriptionMaxBufferBytes: number;
  /** Bound on opening a database connection, waiting for one, and each statement (then 503). */
  databaseQueryTimeoutMs: number;
  // Operability (docs/operations.md).
  /** A second port serving /metrics, /healthz and /readyz, for any role; undefined: none. */
  metricsPort: number | undefined;
  /** Exact browser origins allowed to call the API; `*` allows any, without credentials. */
  corsOrigins: readonly string[];
  /** Requests per principal per minute; 0: no limit. */
  rateLimitPerMinute: number;
  rateLimitUploadsPerMinute: number;
  rateLimitDeploymentsPerMinute: number;
  /** Items one batch may have (BATCH_MAX_ITEMS; docs/batches.md). */
  batchMaxItems: number;
  /** Jobs an owner may have queued before a batch is refused with 429 (MAX_QUEUED_JOBS). */
  maxQueuedJobs: number;
}

export function serverConfig(p: Parser): ServerConfig {
  const nodeEnv = p.oneOf('NODE_ENV', ['development', 'production', 'test'] as const, 'development');
  const host = p.str('HOST', '127.0.0.1');
  const port = p.int('PORT', 8080, 0, 65535);
  const publicUrl = p.url('PUBLIC_URL', `http://${host.includes(':') ? `[${host}]` : host}:${port}`)!;
  const roles = p.list('ROLES');
  const badRoles = roles.filter((r) => !['api', 'worker', 'bridge'].includes(r));
  if (badRoles.length)
    p.problems.push(`ROLES: unknown role(s) ${badRoles.join(', ')}; use api, worker, bridge`);
  const apiKeyHeader = p.str('API_KEY_HEADER', 'x-service-key').toLowerCase();
  if (!/^[a-z0-9-]+$/.test(apiKeyHeader)) p.problems.push(`API_KEY_HEADER: not a valid header name`);
  const storage = p.oneOf('STORAGE', ['local', 's3'] as const, 'local');
  const s3Bucket = p.raw('S3_BUCKET');
  if (storage === 's3' && !s3Bucket) p.problems.push('S3_BUCKET: required when STORAGE=s3');
  return {
    nodeEnv,
    logLevel: p.oneOf(
      'LOG_LEVEL',
      ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const,
      nodeEnv === 'test' ? 'silent' : 'info',
    ),
    host,
    port,
    publicUrl,
    cdnUrl: p.url('CDN_URL', publicUrl)!,
    dataDir: path.resolve(p.str('DATA_DIR', './.data')),
    databaseUrl: p.url('DATABASE_URL', undefined, ['postgres:', 'postgresql:']),
    webDir: path.resolve(p.str('WEB_DIR', './dist/web')),
    apiKeyHeader,
    storage,
    s3Bucket,
    s3Endpoint: p.url('S3_ENDPOINT', undefined),
    s3Region: p.raw('S3_REGION'),
    roles: (roles.length ? roles : ['api', 'worker', 'bridge']) as Role[],
    maxUploadBytes: p.int('MAX_UPLOAD_BYTES', 5 * 1024 ** 3, 1),
    maxBodyBytes: p.int('MAX_BODY_BYTES', 1024 * 1024, 1024),
    adminSubjects: p.list('ADMIN_SUBJECTS'),
    graphqlIntrospection: p.bool('GRAPHQL_INTROSPECTION', nodeEnv !== 'production'),
    graphqlIde: p.bool('GRAPHQL_IDE', nodeEnv !== 'production'),
    shutdownTimeoutMs: p.int('SHUTDOWN_TIMEOUT_MS', 30000, 0, 600000),
    subscriptionAuthRecheckSeconds: p.int('SUBSCRIPTION_AUTH_RECHECK_SECONDS', 60, 1, 3600),
    subscriptionMaxBufferBytes: p.int('SUBSCRIPTION_MAX_BUFFER_BYTES', 4 * 1024 * 1024, 1024, 1024 ** 3),
    databaseQueryTimeoutMs: p.int('DATABASE_QUERY_TIMEOUT_MS', 5000, 100, 600_000),
    metricsPort: p.raw('METRICS_PORT') === undefined ? undefined : p.int('METRICS_PORT', 0, 0, 65535),
    corsOrigins: p.origins('CORS_ORIGINS'),
    rateLimitPerMinute: p.int('RATE_LIMIT_PER_MINUTE', 600, 0, 1_000_000),
    rateLimitUploadsPerMinute: p.int('RATE_LIMIT_UPLOADS_PER_MINUTE', 60, 0, 1_000_000),
    rateLimitDeploymentsPerMinute: p.int('RATE_LIMIT_DEPLOYMENTS_PER_MINUTE', 60, 0, 1_000_000),
    batchMaxItems: p.int('BATCH_MAX_ITEMS', 10_000, 1, 1_000_000),
    maxQueuedJobs: p.int('MAX_QUEUED_JOBS', 100_000, 1, 100_000_000),
  };
}
