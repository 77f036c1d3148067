import http from 'node:http';
import https from 'node:https';
import { BatchV1Api, CoreV1Api, KubeConfig, Watch, type V1Job, type V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../common/logger';
import { Pauses } from '../common/time';
import { CONTAINER_NAME } from './kubernetes.manifest';

/** One kind of request the executor makes, as RBAC names it. */
export interface KubernetesCall {
  group: string;
  resource: string;
  verb: string;
}

/**
 * Every request the executor makes. Each method of the client goes through one of these, and
 * the test of `deploy/kubernetes/` checks the Role against this table: the Role grants exactly
 * these verbs.
 */
export const KUBERNETES_CALLS = {
  createJob: { group: 'batch', resource: 'jobs', verb: 'create' },
  getJob: { group: 'batch', resource: 'jobs', verb: 'get' },
  listJobs: { group: 'batch', resource: 'jobs', verb: 'list' },
  watchJobs: { group: 'batch', resource: 'jobs', verb: 'watch' },
  deleteJob: { group: 'batch', resource: 'jobs', verb: 'delete' },
  getPod: { group: '', resource: 'pods', verb: 'get' },
  listPods: { group: '', resource: 'pods', verb: 'list' },
  watchPods: { group: '', resource: 'pods', verb: 'watch' },
  followLog: { group: '', resource: 'pods/log', verb: 'get' },
} as const satisfies Record<string, KubernetesCall>;

export type KubernetesCallName = keyof typeof KUBERNETES_CALLS;
export type WatchedKind = 'jobs' | 'pods';

/** A request the API server refused or that could not reach it, in words. */
export class KubernetesApiError extends Error {
  constructor(
    readonly call: KubernetesCallName,
    /** The HTTP status; null when there was no answer (network). */
    readonly status: number | null,
    message: string,
    /** Seconds the server asked us to wait (429, 503). */
    readonly retryAfter: number | null = null,
  ) {
    const { verb, resource, group } = KUBERNETES_CALLS[call];
    super(`Kubernetes API: ${verb} ${group ? `${resource}.${group}` : resource}: ${message}`);
  }
}

export interface RetryPolicy {
  /** Attempts of one call before its error is given up to the caller. */
  attempts: number;
  /** First backoff; it doubles up to `maxMs`. */
  baseMs: number;
  maxMs: number;
  /** A longer Retry-After is cut to this. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  attempts: 8,
  baseMs: 250,
  maxMs: 15_000,
  maxRetryAfterMs: 60_000,
};

/** Whether an error is worth another try: no answer, 429, or a server-side 5xx. */
export function isRetryable(err: KubernetesApiError): boolean {
  return err.status === null || err.status === 429 || (err.status >= 500 && err.status !== 501);
}

/** Exponential backoff before attempt `attempt + 1`. */
export function backoffMs(attempt: number, policy: RetryPolicy = DEFAULT_RETRY): number {
  return Math.min(policy.baseMs * 2 ** attempt, policy.maxMs);
}

/** How long to wait before attempt `attempt + 1`: the server's Retry-After, else the backoff. */
export function retryDelayMs(err: KubernetesApiError, attempt: number, policy: RetryPolicy): number {
  if (err.retryAfter !== null) return Math.min(err.retryAfter * 1000, policy.maxRetryAfterMs);
  return backoffMs(attempt, policy);
}

export interface KubernetesClientOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  log: Logger;
  retry?: RetryPolicy;
}

/** A list and the resource version to watch from. */
export interface Listed<T> {
  items: T[];
  resourceVersion: string;
}

export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  /** The object (raw JSON), or a Status for ERROR. */
  object: Record<string, unknown>;
}

/** Credentials from `KUBECONFIG` when given, else the pod's own service account (in-cluster). */
export function loadKubeConfig(kubeconfigFile: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  if (kubeconfigFile) kc.loadFromFile(kubeconfigFile);
  else kc.loadFromCluster();
  return kc;
}

/**
 * The executor's view of the Kubernetes API: the few calls it makes, each retried on 429 (after
 * the server's Retry-After), 5xx and network errors, with errors in words. Typed calls and
 * watches go through @kubernetes/client-node; the log stream is read with Node's HTTP client on
 * the library's credentials, since the library's log helper does not report a stream that broke.
 */
export class KubernetesClient {
  readonly namespace: string;
  private readonly batch: BatchV1Api;
  private readonly core: CoreV1Api;
  private readonly retry: RetryPolicy;
  private closed = false;
  private readonly pauses = new Pauses();

  constructor(private readonly opts: KubernetesClientOptions) {
    this.namespace = opts.namespace;
    this.batch = opts.kubeConfig.makeApiClient(BatchV1Api);
    this.core = opts.kubeConfig.makeApiClient(CoreV1Api);
    this.retry = opts.retry ?? DEFAULT_RETRY;
  }

  /** Stops waiting between retries: calls in progress fail at once. */
  close(): void {
    this.closed = true;
    this.pauses.wakeAll();
  }

  /** Creates the Job; if one of that name exists (an earlier try), answers that one instead. */
  async createJob(manifest: V1Job): Promise<{ job: V1Job; created: boolean }> {
    try {
      const job = await this.call('createJob', () =>
        this.batch.createNamespacedJob({ namespace: this.namespace, body: manifest }),
      );
      return { job, created: true };
    } catch (err) {
      if (!(err instanceof KubernetesApiError) || err.status !== 409) throw err;
      const job = await this.getJob(manifest.metadata!.name!);
      if (!job) throw err;
      return { job, created: false };
    }
  }

  /** The Job of that name, or null. */
  getJob(name: string): Promise<V1Job | null> {
    return this.orNull(
      this.call('getJob', () => this.batch.readNamespacedJob({ namespace: this.namespace, name })),
    );
  }

  async listJobs(labelSelector: string): Promise<Listed<V1Job>> {
    const list = await this.call('listJobs', () =>
      this.batch.listNamespacedJob({ namespace: this.namespace, labelSelector }),
    );
    return { items: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
  }

  /**
   * Deletes the Job and its pods. batch/v1's default propagation would orphan the pods (they
   * would keep running), hence `Background`. Answers false when it was already gone.
   */
  async deleteJob(name: string): Promise<boolean> {
    const done = await this.orNull(
      this.call('deleteJob', () =>
        this.batch.deleteNamespacedJob({ namespace: this.namespace, name, propagationPolicy: 'Background' }),
      ),
    );
    return done !== null;
  }

  getPod(name: string): Promise<V1Pod | null> {
    return this.orNull(
      this.call('getPod', () => this.core.readNamespacedPod({ namespace: this.namespace, name })),
    );
  }

  async listPods(labelSelector: string): Promise<Listed<V1Pod>> {
    const list = await this.call('listPods', () =>
      this.core.listNamespacedPod({ namespace: this.namespace, labelSelector }),
    );
    return { items: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
  }

  /**
   * Starts a watch (retried until it starts); events arrive on `onEvent`, the end of the stream
   * (cleanly: null, or an error) on `onEnd`. Answers a function that stops it (no `onEnd` then).
   */
  async watch(
    kind: WatchedKind,
    query: { labelSelector: string; resourceVersion?: string; timeoutSeconds: number },
    onEvent: (event: WatchEvent) => void,
    onEnd: (err: Error | null) => void,
  ): Promise<() => void> {
    const path =
      kind === 'jobs'
        ? `/apis/batch/v1/namespaces/${this.namespace}/jobs`
        : `/api/v1/namespaces/${this.namespace}/pods`;
    const call = kind === 'jobs' ? 'watchJobs' : 'watchPods';
    return this.call(call, async () => {
      let phase: 'starting' | 'running' | 'stopped' = 'starting';
      let startError: Error | null = null;
      const controller = await new Watch(this.opts.kubeConfig).watch(
        path,
        { ...query, allowWatchBookmarks: true },
        (type: string, object: Record<string, unknown>) => {
          if (phase !== 'stopped') onEvent({ type: type as WatchEvent['type'], object });
        },
        (err: unknown) => {
          if (phase === 'starting')
            startError = (err as Error) ?? new Error('the watch ended before it started');
          else if (phase === 'running') onEnd((err as Error) ?? null);
          phase = 'stopped';
        },
      );
      if (startError) throw startError;
      phase = 'running';
      return () => {
        phase = 'stopped';
        controller.abort();
      };
    });
  }

  /**
   * Follows the container's log from `sinceTime` (RFC 3339; the server counts it to the second),
   * each line prefixed by its RFC 3339 timestamp. `done` settles when the stream ends: resolved
   * when the server ended it, rejected when it broke.
   */
  async followLog(
    pod: string,
    sinceTime: string | null,
    onText: (text: string) => void,
  ): Promise<{ done: Promise<void>; stop: () => void }> {
    return this.call('followLog', async () => {
      const cluster = this.opts.kubeConfig.getCurrentCluster();
      if (!cluster) throw new Error('the kubeconfig has no current cluster');
      const url = new URL(`${cluster.server}/api/v1/namespaces/${this.namespace}/pods/${pod}/log`);
      url.searchParams.set('container', CONTAINER_NAME);
      url.searchParams.set('follow', 'true');
      url.searchParams.set('timestamps', 'true');
      if (sinceTime) url.searchParams.set('sinceTime', sinceTime);
      const options: https.RequestOptions = { method: 'GET' };
      await this.opts.kubeConfig.applyToHTTPSOptions(options);
      const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const req = (url.protocol === 'https:' ? https : http).request(url, options, resolve);
        req.once('error', reject);
        req.end();
      });
      if (res.statusCode !== 200) {
        let body = '';
        for await (const chunk of res) body += chunk;
        throw httpError(res.statusCode ?? 0, body, res.headers['retry-after']);
      }
      res.setEncoding('utf8');
      res.on('data', onText);
      const done = new Promise<void>((resolve, reject) => {
        res.once('end', resolve);
        res.once('error', reject);
        res.once('close', () => (res.complete ? resolve() : reject(new Error('the log stream broke'))));
      });
      return { done, stop: () => res.destroy() };
    });
  }

  /** Runs one call, retried while its errors are worth retrying; errors come out in words. */
  private async call<T>(name: KubernetesCallName, fn: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      if (this.closed) throw new KubernetesApiError(name, null, 'the client was closed');
      try {
        return await fn();
      } catch (raw) {
        const err = asApiError(name, raw);
        if (!isRetryable(err) || attempt + 1 >= this.retry.attempts || this.closed) throw err;
        const delay = retryDelayMs(err, attempt, this.retry);
        this.opts.log.warn(
          { call: name, status: err.status, attempt, delayMs: delay, err: err.message },
          'Kubernetes API call failed; retrying',
        );
        await this.pauses.pause(delay);
      }
    }
  }

  private async orNull<T>(p: Promise<T>): Promise<T | null> {
    try {
      return await p;
    } catch (err) {
      if (err instanceof KubernetesApiError && err.status === 404) return null;
      throw err;
    }
  }
}

/** The Status message of an error body, else the body itself (cut), else the HTTP reason. */
function describe(status: number, body: unknown): string {
  let text = typeof body === 'string' ? body : body === undefined ? '' : JSON.stringify(body);
  try {
    const parsed = typeof body === 'string' ? JSON.parse(body) : body;
    if (parsed && typeof parsed.message === 'string') text = parsed.message;
  } catch {
    // not JSON: the text as it is
  }
  const reason = http.STATUS_CODES[status] ?? 'error';
  return `${status} ${reason}${text ? `: ${text.slice(0, 500)}` : ''}`;
}

/** A non-200 answer of the log endpoint, shaped like the library's ApiException. */
function httpError(status: number, body: string, retryAfter: string | string[] | undefined): Error {
  return Object.assign(new Error(`HTTP ${status}`), {
    code: status,
    body,
    headers: { 'retry-after': retryAfter },
  });
}

/**
 * Errors of the library (ApiException: `code`, `body`, `headers`), of its watch (`statusCode`)
 * and of the network (`code` such as ECONNREFUSED), as one error in words.
 */
function asApiError(call: KubernetesCallName, raw: unknown): KubernetesApiError {
  if (raw instanceof KubernetesApiError) return raw;
  const err = raw as {
    code?: unknown;
    statusCode?: unknown;
    body?: unknown;
    headers?: Record<string, unknown>;
    message?: string;
  };
  const status =
    typeof err.code === 'number' ? err.code : typeof err.statusCode === 'number' ? err.statusCode : null;
  if (status === null) return new KubernetesApiError(call, null, `no answer: ${err.message ?? String(raw)}`);
  const header = err.headers?.['retry-after'];
  const seconds = Number(Array.isArray(header) ? header[0] : header);
  return new KubernetesApiError(
    call,
    status,
    err.body !== undefined
      ? describe(status, err.body)
      : `${status} ${err.message ?? http.STATUS_CODES[status]}`,
    Number.isFinite(seconds) && seconds >= 0 ? seconds : null,
  );
}
