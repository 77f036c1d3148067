import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { DEFAULT_PRICES, parsePriceList, type PriceList } from './common/price-list';
import { parseMachineTypes, type MachineTypes } from './common/machine-types';
import { parse as parseYaml } from 'yaml';

/** The one place that reads process.env. Everything else receives a frozen Config. */

export type Role = 'api' | 'worker' | 'bridge';

export const SLURM_CONTAINER_RUNTIMES = ['none', 'pyxis', 'apptainer', 'oci'] as const;
export type SlurmContainerRuntime = (typeof SLURM_CONTAINER_RUNTIMES)[number];

/** Jobs a worker follows at once on a cluster by default (each costs a little memory, no process). */
export const CLUSTER_WORKER_CONCURRENCY = 5000;

/** An inclusive range of numbers (phone numbers or extensions) of a telephony pool. */
export interface NumberRange {
  from: number;
  to: number;
}

export interface Config {
  nodeEnv: 'development' | 'production' | 'test';
  logLevel: string;
  host: string;
  port: number;
  publicUrl: string;
  cdnUrl: string;
  dataDir: string;
  databaseUrl: string | undefined;
  oidcIssuer: string | undefined;
  oidcAudience: string | undefined;
  oidcJwksCooldownSeconds: number;
  oidcClientId: string;
  oidcClientSecret: string;
  /** How the login flow's client authenticates at the token endpoint. */
  oidcClientAuthMethod: 'client_secret_post' | 'client_secret_basic';
  /** Scopes the login flow asks the identity provider for. */
  oidcScopes: string;
  /**
   * How the login URL names OIDC_AUDIENCE to the provider: RFC 8707's `resource` (an absolute URI
   * only), Auth0's `audience`, both, or neither.
   */
  oidcAudienceParameters: 'both' | 'resource' | 'audience' | 'none';
  /** Bound on each call the login flow makes to the identity provider. */
  oidcTimeoutSeconds: number;
  /** Lifetime of a login session (the `auth_session` cookie). */
  sessionTtlSeconds: number;
  /** Lifetime of the access tokens the web app gets from its session (`POST /api/v1/auth/token`). */
  sessionTokenTtlSeconds: number;
  /** The web app's build (`npm run build:web`), served at `/`. */
  webDir: string;
  apiKeyHeader: string;
  storage: 'local' | 's3';
  s3Bucket: string | undefined;
  s3Endpoint: string | undefined;
  s3Region: string | undefined;
  executor: 'local' | 'slurm' | 'kubernetes';
  roles: readonly Role[];
  bridgePort: number;
  maxUploadBytes: number;
  maxBodyBytes: number;
  adminSubjects: readonly string[];
  localExecutorTrust: 'builtin' | 'any';
  /** Jobs the local executor runs at once. */
  localExecutorConcurrency: number;
  /** PATH of the processes the service starts (local jobs, the chat bridge's, Slurm jobs and commands). */
  localExecutorPath: string;
  /** Per local job (0: none): memory of its processes, open files per process, processes. */
  localExecutorMemoryMb: number;
  localExecutorMaxOpenFiles: number;
  localExecutorMaxProcesses: number;
  /** Jobs' working directories; shared with the compute nodes for cluster executors. */
  jobsDir: string;
  /** Jobs one worker process dispatches and follows at once. */
  workerConcurrency: number;
  /** `MACHINE_TYPES_FILE`: what each machine type means per executor; null: none configured. */
  machineTypes: MachineTypes | null;
  /** How a model's container runs on Slurm. */
  slurmContainerRuntime: SlurmContainerRuntime;
  /** How often a worker reads its jobs' states from Slurm (one `squeue` per poll). */
  slurmPollSeconds: number;
  /** Slurm's own `SLURM_CONF`, handed to the Slurm commands the worker runs. */
  slurmConf: string | undefined;
  /**
   * How long a cluster job's submission (or cancel) is tried again while the cluster cannot be
   * reached (Slurm's controller, the Kubernetes API) before the job fails (infrastructure).
   */
  clusterRetrySeconds: number;
  graphqlIntrospection: boolean;
  graphqlIde: boolean;
  shutdownTimeoutMs: number;
  /** How often a websocket's credential is checked again (revoked keys, expired tokens, removed members). */
  subscriptionAuthRecheckSeconds: number;
  /** How long a team invitation can be accepted. */
  teamInviteTtlHours: number;
  /** Where invitation mails go out (smtp: or smtps:); unset: the inviter passes the link on. */
  smtpUrl: string | undefined;
  /** The From of invitation mails. */
  mailFrom: string;
  /** How long team audit records are kept. */
  auditRetentionDays: number;
  /** Unsent bytes a subscription socket may hold before it is closed as too slow (4413). */
  subscriptionMaxBufferBytes: number;
  telephonyNumbers: readonly NumberRange[];
  telephonyExtensions: readonly NumberRange[];
  telephonySipDomain: string | undefined;
  telephonyRecordingsUrl: string | undefined;
  telephonyRecordingsDir: string;
  telephonyProviderId: number;
  telephonyCdrUsername: string;
  telephonyCdrPassword: string | undefined;
  telephonyCallLinkPerMinute: number;
  freeswitchEslHost: string | undefined;
  freeswitchEslPort: number;
  freeswitchEslPassword: string;
  freeswitchGateway: string | undefined;
  freeswitchEslMaxBackoffMs: number;
  /** The chat bridge's Matrix homeserver (Synapse or Dendrite); unset: user creation answers 503. */
  matrixHomeserverUrl: string | undefined;
  matrixRegistrationSharedSecret: string | undefined;
  /** The homeserver's server name (the part after `:` in user ids); answered as `Hostname`. */
  matrixServerName: string | undefined;
  dendriteBin: string | undefined;
  matterbridgeBin: string | undefined;
  /**
   * The service's AES-256-GCM sealing key (SEALING_KEY, or its older name BRIDGE_SECRET_KEY): the
   * bridge's tokens and owners' secrets. Unset outside production: generated under DATA_DIR.
   */
  sealingKey: Buffer | undefined;
  bridgeLoginMaxFailures: number;
  bridgeLoginMaxFailuresPerIp: number;
  bridgeLoginWindowSeconds: number;
  /** Prices of compute and storage (`PRICES_FILE`, docs/billing.md). */
  prices: PriceList;
  /** The Kubernetes executor (docs/executors-kubernetes.md). */
  kubernetes: KubernetesConfig;
  /** Quotas, priorities and fair share (docs/governance.md). */
  governance: GovernanceConfig;
  /** Plain http webhooks allowed (`WEBHOOK_ALLOW_HTTP`); https only otherwise. */
  webhookAllowHttp: boolean;
  /** `host:port` entries webhooks may reach although they are private addresses (tests, own receivers). */
  webhookAllowPrivate: readonly string[];
  /** Bound on each delivery attempt. */
  webhookTimeoutSeconds: number;
  /** Short tasks (webhook deliveries, deadlines) one worker process runs at once. */
  webhookConcurrency: number;
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
}

export interface KubernetesConfig {
  /** `KUBECONFIG`: a kubeconfig file; unset: the pod's own service account (in-cluster). */
  kubeconfig: string | undefined;
  namespace: string;
  /** The ReadWriteMany claim that holds JOBS_DIR; the job pods mount their directory from it. */
  jobsPvc: string | undefined;
  imagePullGraceSeconds: number;
  unschedulableSeconds: number;
  imagePullSecrets: readonly string[];
  /** The job pods' service account; unset: none (no API token in job pods). */
  jobServiceAccount: string | undefined;
  /** The service's own image, for built-in models (`builtin/...` containers). */
  builtinImage: string | undefined;
  /** How long a finished Job stays in the cluster (`ttlSecondsAfterFinished`). */
  jobTtlSeconds: number;
}

export interface GovernanceConfig {
  /** FAIR_SHARE_HALF_LIFE_HOURS: how fast an owner's past usage stops counting against it. */
  fairShareHalfLifeHours: number;
  /** QUOTA_MAX_RUNNING_JOBS: jobs an owner may have starting or running; null: unlimited. */
  maxRunningJobs: number | null;
  /** QUOTA_MAX_MACHINES (`gpu-a100=4,cpu=64`): machines an owner may use per machine type. */
  maxMachines: Readonly<Record<string, number>>;
  /** SLURM_ACCOUNTS_FILE (`user:<id>` / `team:<id>` -> account) and SLURM_DEFAULT_ACCOUNT. */
  slurmAccounts: Readonly<Record<string, string>>;
  slurmDefaultAccount: string | undefined;
  /** SLURM_QOS_LOW, _NORMAL, _HIGH: the QOS of each priority; without one, `--nice` orders them. */
  slurmQos: Readonly<Partial<Record<'low' | 'normal' | 'high', string>>>;
  /** KUBERNETES_PRIORITY_CLASSES (`low=batch-low,high=interactive`): PriorityClass per priority. */
  kubernetesPriorityClasses: Readonly<Partial<Record<'low' | 'normal' | 'high', string>>>;
  /**
   * KUBERNETES_KUEUE_QUEUES (`team:<id>=lab,*=jobs-{owner_id}`): each owner's Kueue LocalQueue
   * (`*`: every other owner; `{owner_type}`, `{owner_id}` filled in). Empty: Kueue is not used.
   */
  kueueQueues: Readonly<Record<string, string>>;
}

/** DNS-1123 names, as Kubernetes wants them for namespaces (labels) and objects (subdomains). */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** An owner as mapping files and lists name it. */
const OWNER_KEY = /^(user|team):[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const PRIORITY_KEY = /^(low|normal|high)$/;
/** Slurm account and QOS names. */
const SLURM_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** Pool limits: a typo such as an extra digit should fail the start, not create a huge pool. */
export const MAX_POOL_RANGE_SIZE = 1_000_000;
export const MAX_POOL_ENTRIES = 1000;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
}

type Env = Record<string, string | undefined>;

class Parser {
  readonly problems: string[] = [];
  constructor(private readonly env: Env) {}

  raw(name: string): string | undefined {
    const v = this.env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  }

  str(name: string, fallback: string): string {
    return this.raw(name) ?? fallback;
  }

  int(name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!/^\d+$/.test(v) || !Number.isSafeInteger(n) || n < min || n > max) {
      this.problems.push(`${name}: expected an integer between ${min} and ${max}, got "${v}"`);
      return fallback;
    }
    return n;
  }

  num(name: string, fallback: number, min: number, max: number): number {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!/^\d+(\.\d+)?$/.test(v) || n < min || n > max) {
      this.problems.push(`${name}: expected a number between ${min} and ${max}, got "${v}"`);
      return fallback;
    }
    return n;
  }

  bool(name: string, fallback: boolean): boolean {
    const v = this.raw(name)?.toLowerCase();
    if (v === undefined) return fallback;
    if (['1', 'true', 'yes', 'on'].includes(v)) return true;
    if (['0', 'false', 'no', 'off'].includes(v)) return false;
    this.problems.push(`${name}: expected true or false, got "${v}"`);
    return fallback;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(v)) {
      this.problems.push(`${name}: expected one of ${allowed.join(', ')}, got "${v}"`);
      return fallback;
    }
    return v as T;
  }

  /** A URL without trailing slashes, unless `exact` (an OIDC issuer is compared character for character). */
  url(
    name: string,
    fallback: string | undefined,
    protocols = ['http:', 'https:'],
    exact = false,
  ): string | undefined {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    try {
      const u = new URL(v);
      if (!protocols.includes(u.protocol)) throw new Error('protocol');
      return exact ? v : v.replace(/\/+$/, '');
    } catch {
      this.problems.push(`${name}: expected a URL (${protocols.join(' or ')}), got "${v}"`);
      return fallback;
    }
  }

  /** A string matching `pattern` (anchored), described by `what` when it does not. */
  matching(name: string, pattern: RegExp, what: string): string | undefined {
    const v = this.raw(name);
    if (v !== undefined && !pattern.test(v)) {
      this.problems.push(`${name}: expected ${what}, got "${v}"`);
      return undefined;
    }
    return v;
  }

  /**
   * A pool of numbers: comma-separated single values and `from-to` ranges of digits (at most 15,
   * no leading zero, both ends of a range the same length), without overlaps.
   */
  ranges(name: string, fallback = ''): NumberRange[] {
    const parts = (this.raw(name) ?? fallback)
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const problem = (what: string) => {
      this.problems.push(`${name}: ${what}`);
      return [];
    };
    if (parts.length > MAX_POOL_ENTRIES) return problem(`at most ${MAX_POOL_ENTRIES} entries`);
    const ranges: NumberRange[] = [];
    for (const part of parts) {
      const m = /^([1-9]\d{0,14})(?:-([1-9]\d{0,14}))?$/.exec(part);
      if (!m) return problem(`"${part}" is not digits (at most 15, no leading zero) or a range of them`);
      const [from, to] = [Number(m[1]), Number(m[2] ?? m[1])];
      if (m[2] && m[1].length !== m[2].length)
        return problem(`both ends of "${part}" must have the same number of digits`);
      if (to < from) return problem(`"${part}" ends before it starts`);
      if (to - from + 1 > MAX_POOL_RANGE_SIZE)
        return problem(`"${part}" holds more than ${MAX_POOL_RANGE_SIZE} values`);
      ranges.push({ from, to });
    }
    const sorted = [...ranges].sort((a, b) => a.from - b.from);
    for (let i = 1; i < sorted.length; i++) {
      if (sorted[i].from <= sorted[i - 1].to)
        return problem(
          `${sorted[i - 1].from}-${sorted[i - 1].to} and ${sorted[i].from}-${sorted[i].to} overlap`,
        );
    }
    return ranges;
  }

  /** A path to an executable file, resolved to an absolute path. */
  executable(name: string): string | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    const file = path.resolve(v);
    try {
      if (!statSync(file).isFile()) throw new Error('not a file');
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      this.problems.push(`${name}: "${v}" is not an executable file`);
      return undefined;
    }
  }

  /** 32 bytes given as 64 hex digits or base64 (standard or URL alphabet). */
  key32(name: string): Buffer | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    const key = /^[0-9a-fA-F]{64}$/.test(v)
      ? Buffer.from(v, 'hex')
      : /^[A-Za-z0-9+/_-]{43}=?$/.test(v)
        ? Buffer.from(v, 'base64')
        : undefined;
    if (key?.length !== 32) {
      this.problems.push(`${name}: expected 32 bytes as 64 hex digits or base64`);
      return undefined;
    }
    return key;
  }

  /** A price list file (JSON or YAML, docs/billing.md); unset: the built-in one. */
  prices(name: string): PriceList {
    return this.file(name, parsePriceList, DEFAULT_PRICES);
  }

  /** A machine types file (JSON or YAML, docs/executors.md); unset: null. */
  machineTypes(name: string): MachineTypes | null {
    return this.file(name, parseMachineTypes, null);
  }

  /** A file named by `name`, parsed; unset, unreadable or invalid: `fallback` (and a problem). */
  private file<T>(name: string, parse: (text: string) => T, fallback: T): T {
    const file = this.raw(name);
    if (file === undefined) return fallback;
    try {
      return parse(readFileSync(file, 'utf8'));
    } catch (err) {
      const { code, message } = err as NodeJS.ErrnoException;
      this.problems.push(`${name}: ${code ? `cannot read "${file}" (${code})` : `"${file}": ${message}`}`);
      return fallback;
    }
  }

  /** A comma-separated list whose every item matches `pattern`. */
  listOf(name: string, pattern: RegExp, what: string): string[] {
    const items = this.list(name);
    const bad = items.filter((i) => !pattern.test(i));
    if (bad.length)
      this.problems.push(`${name}: expected ${what}, got ${bad.map((b) => `"${b}"`).join(', ')}`);
    return items.filter((i) => pattern.test(i));
  }

  /** Browser origins (`scheme://host[:port]`, exactly as browsers send them), or `*`. */
  origins(name: string): string[] {
    const origins = this.list(name);
    for (const o of origins) {
      if (o === '*') continue;
      let ok: boolean;
      try {
        const u = new URL(o);
        ok = ['http:', 'https:'].includes(u.protocol) && u.origin === o && !o.includes('*');
      } catch {
        ok = false;
      }
      if (!ok) this.problems.push(`${name}: "${o}" is not an origin such as https://app.example.com`);
    }
    return origins;
  }

  /** `key=value,...`: each key matching `key`, each value `value`. */
  pairs(name: string, key: RegExp, value: RegExp, what: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const item of this.list(name)) {
      const at = item.indexOf('=');
      const [k, v] = [item.slice(0, at).trim(), item.slice(at + 1).trim()];
      if (at < 0 || !key.test(k) || !value.test(v)) this.problems.push(`${name}: "${item}" is not ${what}`);
      else out[k] = v;
    }
    return out;
  }

  /** A file mapping owners (`user:<id>`, `team:<id>`) to names, as JSON or YAML. */
  ownerMap(name: string, value: RegExp): Record<string, string> {
    return this.file(
      name,
      (text) => {
        const map: unknown = parseYaml(text);
        if (!map || typeof map !== 'object' || Array.isArray(map)) throw new Error('expected a mapping');
        for (const [k, v] of Object.entries(map))
          if (!OWNER_KEY.test(k) || typeof v !== 'string' || !value.test(v))
            throw new Error(`"${k}": expected user:<id> or team:<id> mapped to a name`);
        return map as Record<string, string>;
      },
      {},
    );
  }

  list(name: string): string[] {
    return (this.raw(name) ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  }
}

export function loadConfig(env: Env = readProcessEnv()): Config {
  const p = new Parser(env);
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
  const executor = p.oneOf('EXECUTOR', ['local', 'slurm', 'kubernetes'] as const, 'local');
  const dataDir = path.resolve(p.str('DATA_DIR', './.data'));
  const jobsDir = path.resolve(p.str('JOBS_DIR', path.join(dataDir, 'jobs')));
  const slurmContainerRuntime = p.oneOf('SLURM_CONTAINER_RUNTIME', SLURM_CONTAINER_RUNTIMES, 'none');
  // Container runtimes take the job's directory in mount lists separated by `,` and `:`.
  if (executor === 'slurm' && /[,:\n]/.test(jobsDir))
    p.problems.push(`JOBS_DIR: "${jobsDir}" must not contain commas, colons or newlines with EXECUTOR=slurm`);
  const localExecutorConcurrency = p.int('LOCAL_EXECUTOR_CONCURRENCY', availableParallelism(), 1, 1024);
  const oidcScopes = p.str('OIDC_SCOPES', 'openid profile email offline_access');
  if (!oidcScopes.split(/\s+/).includes('openid')) p.problems.push('OIDC_SCOPES: must include openid');
  const storage = p.oneOf('STORAGE', ['local', 's3'] as const, 'local');
  const s3Bucket = p.raw('S3_BUCKET');
  if (storage === 's3' && !s3Bucket) p.problems.push('S3_BUCKET: required when STORAGE=s3');
  const freeswitchEslHost = p.matching(
    'FREESWITCH_ESL_HOST',
    /^[\w.:[\]-]{1,253}$/,
    'a host name or address',
  );
  // The gateway and the domain are written into originate commands: a strict alphabet.
  const freeswitchGateway = p.matching(
    'FREESWITCH_GATEWAY',
    /^[\w.-]{1,64}$/,
    'a gateway name ([A-Za-z0-9_.-])',
  );
  if (freeswitchEslHost && !freeswitchGateway && !p.raw('FREESWITCH_GATEWAY'))
    p.problems.push('FREESWITCH_GATEWAY: required when FREESWITCH_ESL_HOST is set');
  const effectiveRoles = (roles.length ? roles : ['api', 'worker', 'bridge']) as Role[];
  const matrixHomeserverUrl = p.url('MATRIX_HOMESERVER_URL', undefined);
  const matrixRegistrationSharedSecret = p.raw('MATRIX_REGISTRATION_SHARED_SECRET');
  if (matrixHomeserverUrl && !matrixRegistrationSharedSecret)
    p.problems.push('MATRIX_REGISTRATION_SHARED_SECRET: required with MATRIX_HOMESERVER_URL');
  const matrixServerName = p.raw('MATRIX_SERVER_NAME')?.toLowerCase();
  if (matrixServerName && !/^[a-z0-9.-]+(:\d{1,5})?$/.test(matrixServerName))
    p.problems.push(
      `MATRIX_SERVER_NAME: expected a host name with an optional port, got "${matrixServerName}"`,
    );
  // One key under two names: BRIDGE_SECRET_KEY came first, when only the bridge sealed anything.
  const bridgeSecretKey = p.key32('BRIDGE_SECRET_KEY');
  const sealingKey = p.key32('SEALING_KEY') ?? bridgeSecretKey;
  if (p.raw('SEALING_KEY') && bridgeSecretKey && !sealingKey?.equals(bridgeSecretKey))
    p.problems.push('SEALING_KEY: differs from BRIDGE_SECRET_KEY, its older name; set one of them');
  if (nodeEnv === 'production' && effectiveRoles.includes('bridge') && !sealingKey)
    p.problems.push('SEALING_KEY (or BRIDGE_SECRET_KEY): required in production when the bridge role runs');

  const config: Config = {
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
    dataDir,
    databaseUrl: p.url('DATABASE_URL', undefined, ['postgres:', 'postgresql:']),
    // Auth0's issuer ends with a slash, and tokens must name it exactly.
    oidcIssuer: p.url('OIDC_ISSUER', undefined, ['http:', 'https:'], true),
    oidcAudience: p.raw('OIDC_AUDIENCE'),
    oidcJwksCooldownSeconds: p.int('OIDC_JWKS_COOLDOWN_SECONDS', 30, 0, 3600),
    oidcClientId: p.str('OIDC_CLIENT_ID', 'media-platform-dev'),
    oidcClientSecret: p.str('OIDC_CLIENT_SECRET', 'media-platform-dev-secret'),
    oidcClientAuthMethod: p.oneOf(
      'OIDC_CLIENT_AUTH_METHOD',
      ['client_secret_post', 'client_secret_basic'] as const,
      'client_secret_post',
    ),
    oidcScopes,
    oidcAudienceParameters: p.oneOf(
      'OIDC_AUDIENCE_PARAMETERS',
      ['both', 'resource', 'audience', 'none'] as const,
      'both',
    ),
    oidcTimeoutSeconds: p.int('OIDC_TIMEOUT_SECONDS', 5, 1, 120),
    sessionTtlSeconds: p.int('SESSION_TTL_SECONDS', 14 * 24 * 3600, 1, 365 * 24 * 3600),
    sessionTokenTtlSeconds: p.int('SESSION_TOKEN_TTL_SECONDS', 600, 10, 3600),
    webDir: path.resolve(p.str('WEB_DIR', './dist/web')),
    apiKeyHeader,
    storage,
    s3Bucket,
    s3Endpoint: p.url('S3_ENDPOINT', undefined),
    s3Region: p.raw('S3_REGION'),
    executor,
    roles: effectiveRoles,
    bridgePort: p.int('BRIDGE_PORT', 8081, 0, 65535),
    maxUploadBytes: p.int('MAX_UPLOAD_BYTES', 5 * 1024 ** 3, 1),
    maxBodyBytes: p.int('MAX_BODY_BYTES', 1024 * 1024, 1024),
    adminSubjects: p.list('ADMIN_SUBJECTS'),
    localExecutorTrust: p.oneOf('LOCAL_EXECUTOR_TRUST', ['builtin', 'any'] as const, 'builtin'),
    localExecutorConcurrency,
    localExecutorPath: p.str('PATH', '/usr/local/bin:/usr/bin:/bin'),
    localExecutorMemoryMb: p.int('LOCAL_EXECUTOR_MEMORY_MB', 2048, 0, 1_048_576),
    localExecutorMaxOpenFiles: p.int('LOCAL_EXECUTOR_MAX_OPEN_FILES', 1024, 0, 1_048_576),
    localExecutorMaxProcesses: p.int('LOCAL_EXECUTOR_MAX_PROCESSES', 256, 0, 1_000_000),
    jobsDir,
    // A local job takes a CPU; a cluster job costs the worker only what following it costs.
    workerConcurrency: p.int(
      'WORKER_CONCURRENCY',
      executor === 'local' ? localExecutorConcurrency : CLUSTER_WORKER_CONCURRENCY,
      1,
      100_000,
    ),
    machineTypes: p.machineTypes('MACHINE_TYPES_FILE'),
    slurmContainerRuntime,
    slurmPollSeconds: p.int('SLURM_POLL_SECONDS', 2, 1, 600),
    slurmConf: p.raw('SLURM_CONF'),
    clusterRetrySeconds: p.int('CLUSTER_RETRY_SECONDS', 3600, 0, 7 * 86400),
    graphqlIntrospection: p.bool('GRAPHQL_INTROSPECTION', nodeEnv !== 'production'),
    graphqlIde: p.bool('GRAPHQL_IDE', nodeEnv !== 'production'),
    shutdownTimeoutMs: p.int('SHUTDOWN_TIMEOUT_MS', 30000, 0, 600000),
    subscriptionAuthRecheckSeconds: p.int('SUBSCRIPTION_AUTH_RECHECK_SECONDS', 60, 1, 3600),
    teamInviteTtlHours: p.int('TEAM_INVITE_TTL_HOURS', 168, 1, 24 * 365),
    smtpUrl: p.url('SMTP_URL', undefined, ['smtp:', 'smtps:'], true),
    mailFrom: p.str('MAIL_FROM', 'media-platform@localhost'),
    auditRetentionDays: p.int('AUDIT_RETENTION_DAYS', 365, 1, 36500),
    subscriptionMaxBufferBytes: p.int('SUBSCRIPTION_MAX_BUFFER_BYTES', 4 * 1024 * 1024, 1024, 1024 ** 3),
    telephonyNumbers: p.ranges('TELEPHONY_NUMBERS'),
    telephonyExtensions: p.ranges('TELEPHONY_EXTENSIONS', '1000-8999'),
    telephonySipDomain: p.matching('TELEPHONY_SIP_DOMAIN', /^[A-Za-z0-9.-]{1,253}$/, 'a domain name'),
    telephonyRecordingsUrl: p.url('TELEPHONY_RECORDINGS_URL', undefined),
    telephonyRecordingsDir: p
      .str('TELEPHONY_RECORDINGS_DIR', '/var/lib/freeswitch/recordings')
      .replace(/\/+$/, ''),
    telephonyProviderId: p.int('TELEPHONY_PROVIDER_ID', 1, 0, 2147483647),
    telephonyCdrUsername:
      p.matching('TELEPHONY_CDR_USERNAME', /^[^:\s]{1,128}$/, 'a user name without colons or spaces') ??
      'freeswitch',
    telephonyCdrPassword: p.raw('TELEPHONY_CDR_PASSWORD'),
    telephonyCallLinkPerMinute: p.int('TELEPHONY_CALL_LINK_PER_MINUTE', 10, 1, 100000),
    freeswitchEslHost,
    freeswitchEslPort: p.int('FREESWITCH_ESL_PORT', 8021, 1, 65535),
    // Sent as `auth <password>`: one line.
    freeswitchEslPassword:
      p.matching('FREESWITCH_ESL_PASSWORD', /^[^\r\n]{1,256}$/, 'a password on one line') ?? 'ClueCon',
    freeswitchGateway,
    freeswitchEslMaxBackoffMs: p.int('FREESWITCH_ESL_MAX_BACKOFF_MS', 30000, 10, 600000),
    matrixHomeserverUrl,
    matrixRegistrationSharedSecret,
    matrixServerName:
      matrixServerName ?? (matrixHomeserverUrl ? new URL(matrixHomeserverUrl).host.toLowerCase() : undefined),
    dendriteBin: p.executable('DENDRITE_BIN'),
    matterbridgeBin: p.executable('MATTERBRIDGE_BIN'),
    sealingKey,
    bridgeLoginMaxFailures: p.int('BRIDGE_LOGIN_MAX_FAILURES', 5, 1, 1000),
    bridgeLoginMaxFailuresPerIp: p.int('BRIDGE_LOGIN_MAX_FAILURES_PER_IP', 20, 1, 100000),
    bridgeLoginWindowSeconds: p.int('BRIDGE_LOGIN_WINDOW_SECONDS', 900, 1, 86400),
    prices: p.prices('PRICES_FILE'),
    kubernetes: {
      kubeconfig: p.raw('KUBECONFIG'),
      namespace:
        p.matching('KUBERNETES_NAMESPACE', DNS_LABEL, 'a namespace name (DNS label: a-z, 0-9, -)') ??
        'default',
      jobsPvc: p.matching('KUBERNETES_JOBS_PVC', DNS_SUBDOMAIN, 'a claim name (DNS subdomain)'),
      imagePullGraceSeconds: p.int('KUBERNETES_IMAGE_PULL_GRACE_SECONDS', 120, 0, 86400),
      unschedulableSeconds: p.int('KUBERNETES_UNSCHEDULABLE_SECONDS', 600, 0, 7 * 86400),
      imagePullSecrets: p.listOf(
        'KUBERNETES_IMAGE_PULL_SECRETS',
        DNS_SUBDOMAIN,
        'Secret names (DNS subdomains)',
      ),
      jobServiceAccount: p.matching(
        'KUBERNETES_JOB_SERVICE_ACCOUNT',
        DNS_SUBDOMAIN,
        'a service account name (DNS subdomain)',
      ),
      builtinImage: p.matching(
        'KUBERNETES_BUILTIN_IMAGE',
        /^\S{1,512}$/,
        'an image reference without spaces',
      ),
      jobTtlSeconds: p.int('KUBERNETES_JOB_TTL_SECONDS', 86400, 0, 30 * 86400),
    },
    governance: {
      fairShareHalfLifeHours: p.num('FAIR_SHARE_HALF_LIFE_HOURS', 24, 0.001, 24 * 365),
      maxRunningJobs:
        p.raw('QUOTA_MAX_RUNNING_JOBS') === undefined
          ? null
          : p.int('QUOTA_MAX_RUNNING_JOBS', 0, 0, 1_000_000),
      maxMachines: Object.fromEntries(
        Object.entries(p.pairs('QUOTA_MAX_MACHINES', /^\S{1,64}$/, /^\d{1,7}$/, 'machine-type=count')).map(
          ([k, v]) => [k, Number(v)],
        ),
      ),
      slurmAccounts: p.ownerMap('SLURM_ACCOUNTS_FILE', SLURM_NAME),
      slurmDefaultAccount: p.matching('SLURM_DEFAULT_ACCOUNT', SLURM_NAME, 'a Slurm account name'),
      slurmQos: Object.fromEntries(
        (['low', 'normal', 'high'] as const)
          .map((k) => [k, p.matching(`SLURM_QOS_${k.toUpperCase()}`, SLURM_NAME, 'a Slurm QOS name')])
          .filter(([, v]) => v),
      ),
      kubernetesPriorityClasses: p.pairs(
        'KUBERNETES_PRIORITY_CLASSES',
        PRIORITY_KEY,
        DNS_SUBDOMAIN,
        'low|normal|high=<PriorityClass name>',
      ),
      kueueQueues: p.pairs(
        'KUBERNETES_KUEUE_QUEUES',
        new RegExp(`${OWNER_KEY.source}|^\\*$`),
        /^[a-z0-9{}_-]{1,253}$/,
        'user:<id>|team:<id>|*=<LocalQueue name>',
      ),
    },
    webhookAllowHttp: p.bool('WEBHOOK_ALLOW_HTTP', false),
    webhookAllowPrivate: webhookAllowPrivate(p),
    webhookTimeoutSeconds: p.int('WEBHOOK_TIMEOUT_SECONDS', 10, 1, 60),
    webhookConcurrency: p.int('WEBHOOK_CONCURRENCY', 4, 1, 256),
    databaseQueryTimeoutMs: p.int('DATABASE_QUERY_TIMEOUT_MS', 5000, 100, 600_000),
    metricsPort: p.raw('METRICS_PORT') === undefined ? undefined : p.int('METRICS_PORT', 0, 0, 65535),
    corsOrigins: p.origins('CORS_ORIGINS'),
    rateLimitPerMinute: p.int('RATE_LIMIT_PER_MINUTE', 600, 0, 1_000_000),
    rateLimitUploadsPerMinute: p.int('RATE_LIMIT_UPLOADS_PER_MINUTE', 60, 0, 1_000_000),
    rateLimitDeploymentsPerMinute: p.int('RATE_LIMIT_DEPLOYMENTS_PER_MINUTE', 60, 0, 1_000_000),
  };
  // Job pods mount their directory from the claim that holds JOBS_DIR.
  if (executor === 'kubernetes' && !config.kubernetes.jobsPvc && p.raw('KUBERNETES_JOBS_PVC') === undefined)
    p.problems.push(
      'KUBERNETES_JOBS_PVC: required when EXECUTOR=kubernetes (the ReadWriteMany claim holding JOBS_DIR)',
    );
  if (p.problems.length) throw new ConfigError(p.problems);
  return Object.freeze(config);
}

/** `WEBHOOK_ALLOW_PRIVATE`: `host:port` entries (IPv6 in brackets), lower-cased. */
function webhookAllowPrivate(p: Parser): string[] {
  const entries = p.list('WEBHOOK_ALLOW_PRIVATE').map((e) => e.toLowerCase());
  const bad = entries.filter(
    (e) => !/^(\[[0-9a-f:.]+\]|[a-z0-9.-]+):\d{1,5}$/.test(e) || Number(e.split(':').pop()) > 65535,
  );
  if (bad.length)
    p.problems.push(
      `WEBHOOK_ALLOW_PRIVATE: expected host:port entries ([v6]:port for IPv6), got ${bad.join(', ')}`,
    );
  return entries;
}

/** `loadConfig` for entry points (the service, scripts): a bad configuration is printed, exit 2. */
export function loadConfigOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(err.message);
    process.exit(2);
  }
}

/** Reads `.env` from the working directory (if present) below the real environment. */
function readProcessEnv(): Env {
  const file = path.resolve('.env');
  if (existsSync(file)) process.loadEnvFile(file);
  return process.env;
}
