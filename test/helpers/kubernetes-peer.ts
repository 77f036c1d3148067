import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type http from 'node:http';
import https from 'node:https';
import { constants } from 'node:os';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import path from 'node:path';
import { stringify } from 'yaml';
import {
  ContainerLog,
  containerEnvironment,
  hostMounts,
  kubeTime,
  podRequests,
  schedule,
  type PeerNode,
  type PodSpec,
} from './kubernetes-peer-kubelet';

/**
 * A Kubernetes API server for tests, with a job controller, a scheduler and a kubelet that runs
 * each pod's container as a local process. It speaks the REST protocol of the parts the
 * executor uses:
 *
 * - `batch/v1` Jobs: create, get, list and watch (label selectors), delete with
 *   `propagationPolicy` (Background and Foreground delete the pods; Orphan, batch/v1's default,
 *   leaves them running), `backoffLimit`, `activeDeadlineSeconds`, `ttlSecondsAfterFinished`,
 *   Indexed Jobs (`completionMode`, `completions`, `parallelism`);
 * - `v1` Pods: get, list and watch, `pods/{name}/log` with `follow`, `timestamps`, `sinceTime`;
 * - watches from a `resourceVersion`, with bookmarks when asked, `410 Gone` (an ERROR event
 *   with status Expired, as the API server's watch cache answers) for a version compacted away,
 *   `timeoutSeconds`;
 * - Status objects for errors (404, 409, 422, 401, 403 from the RBAC rules given, 500, 429 with
 *   Retry-After);
 * - the kubelet: `$(VAR)` expansion of command, args and env; containers run without a shell in
 *   their own process group, with exactly the pod's environment; claims are local directories,
 *   mounted by `subPath`; images that cannot be pulled (ErrImagePull, ImagePullBackOff), OOM
 *   kills, evictions, unschedulable pods (node selector, taints, resources), grace periods.
 *
 * Tests drive failures through its methods: `failNext`, `dropWatches`, `endWatches`,
 * `holdWatches`, `compact`, `makeUnpullable`, `oomKill`, `evict`, `addNode`.
 */

type Kind = 'jobs' | 'pods';
type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

interface Meta {
  name: string;
  namespace: string;
  uid: string;
  resourceVersion: string;
  creationTimestamp: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[];
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  finalizers?: string[];
  generateName?: string;
}

interface Condition {
  type: string;
  status: 'True' | 'False';
  reason?: string;
  message?: string;
  lastTransitionTime: string;
  lastProbeTime?: string | null;
}

export interface ContainerState {
  waiting?: { reason: string; message?: string };
  running?: { startedAt: string };
  terminated?: {
    exitCode: number;
    reason: string;
    message?: string;
    startedAt?: string;
    finishedAt: string;
    containerID?: string;
  };
}

export interface PeerPod {
  apiVersion: 'v1';
  kind: 'Pod';
  metadata: Meta;
  spec: PodSpec;
  status: {
    phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
    reason?: string;
    message?: string;
    conditions?: Condition[];
    hostIP?: string;
    podIP?: string;
    startTime?: string;
    qosClass?: string;
    containerStatuses?: {
      name: string;
      image: string;
      imageID: string;
      ready: boolean;
      started: boolean;
      restartCount: number;
      state: ContainerState;
      lastState: ContainerState;
    }[];
  };
}

export interface PeerJob {
  apiVersion: 'batch/v1';
  kind: 'Job';
  metadata: Meta;
  spec: {
    backoffLimit?: number;
    activeDeadlineSeconds?: number;
    ttlSecondsAfterFinished?: number;
    completions?: number;
    parallelism?: number;
    completionMode?: 'NonIndexed' | 'Indexed';
    selector?: { matchLabels: Record<string, string> };
    template: { metadata?: { labels?: Record<string, string> }; spec: PodSpec };
    [more: string]: unknown;
  };
  status: {
    startTime?: string;
    completionTime?: string;
    active?: number;
    ready?: number;
    terminating?: number;
    succeeded?: number;
    failed?: number;
    completedIndexes?: string;
    conditions?: Condition[];
  };
}

type KObject = PeerJob | PeerPod;

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/** One API request as the peer saw it (after authentication). */
export interface PeerCall {
  verb: string;
  group: string;
  resource: string;
  namespace: string;
  name?: string;
  query: Record<string, string>;
  status?: number;
}

export interface KubernetesPeerOptions {
  /** Persistent volume claims: claim name -> the local directory that holds it. */
  claims?: Record<string, string>;
  nodes?: PeerNode[];
  /** PATH of containers that do not set one (what the image would give). */
  path?: string;
  /** RBAC: rules the client's service account has in `rbacNamespace`; unset: everything is allowed. */
  rules?: PolicyRule[];
  rbacNamespace?: string;
  serviceAccount?: string;
  /** Time between ErrImagePull and ImagePullBackOff and back (Kubernetes backs off from 10 s). */
  imagePullRetryMs?: number;
}

interface Failure {
  verb?: string;
  resource?: string;
  status: number;
  retryAfter?: number;
  times: number;
  /** The request takes effect, then its answer is the failure (a reply lost on the way). */
  afterApplying: boolean;
}

interface Watcher {
  kind: Kind;
  namespace: string;
  selector: (labels: Record<string, string> | undefined) => boolean;
  res: http.ServerResponse;
  bookmarks: boolean;
  end: () => void;
}

interface Runtime {
  process: ChildProcess | null;
  log: ContainerLog;
  /** Set when the peer killed the container for a reason of its own (OOM, eviction). */
  killedAs?: { reason: string; message?: string; podReason?: string };
  timers: NodeJS.Timeout[];
}

const DEFAULT_NODE: PeerNode = {
  name: 'peer-node-1',
  labels: { 'kubernetes.io/hostname': 'peer-node-1', 'kubernetes.io/os': 'linux' },
  capacity: { cpu: '16', memory: '64Gi', pods: '110' },
};
const HISTORY_LIMIT = 10_000;
/**
 * The peer serves HTTPS, as API servers do (the client refuses plain HTTP without turning TLS
 * checks off): a certificate for 127.0.0.1 from a CA made for these tests only (its key was
 * thrown away), which the kubeconfig names.
 */
const TLS_DIR = path.join(__dirname, '..', 'fixtures', 'kubernetes-peer');
const TERMINAL = new Set(['Succeeded', 'Failed']);

export class KubernetesPeer {
  readonly url: string;
  readonly token = randomBytes(16).toString('hex');
  /** Every API request, in order. */
  readonly calls: PeerCall[] = [];
  private readonly objects = { jobs: new Map<string, PeerJob>(), pods: new Map<string, PeerPod>() };
  private readonly history: { rv: number; kind: Kind; type: EventType; object: KObject }[] = [];
  private rv = 1000;
  /** Watches from a version at or below this answer 410 Gone. */
  private compactedRv = 1000;
  private readonly watchers = new Set<Watcher>();
  private readonly logStreams = new Set<http.ServerResponse>();
  private held: (() => void)[] | null = null;
  private readonly failures: Failure[] = [];
  private readonly unpullable = new Set<string>();
  private readonly runtimes = new Map<string, Runtime>();
  private readonly jobTimers = new Map<string, NodeJS.Timeout[]>();
  private readonly changeListeners = new Set<() => void>();
  private readonly nodes: PeerNode[];
  private readonly sockets = new Set<Duplex>();
  private stopped = false;
  private createDelayMs = 0;
  private createsInFlight = 0;
  /** The most Job creations the peer was answering at once (see slowCreates). */
  peakCreatesInFlight = 0;

  private constructor(
    private readonly server: https.Server,
    private readonly opts: KubernetesPeerOptions,
  ) {
    const { port } = server.address() as AddressInfo;
    this.url = `https://127.0.0.1:${port}`;
    this.nodes = opts.nodes ?? [DEFAULT_NODE];
    server.on('request', (req, res) => this.handle(req, res));
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
    });
  }

  static async start(opts: KubernetesPeerOptions = {}): Promise<KubernetesPeer> {
    const server = https.createServer({
      key: readFileSync(path.join(TLS_DIR, 'server.key')),
      cert: readFileSync(path.join(TLS_DIR, 'server.crt')),
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return new KubernetesPeer(server, opts);
  }

  /** A kubeconfig for this peer, with its bearer token and `namespace` as the context's. */
  kubeconfig(namespace = 'default'): string {
    return stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'peer',
          cluster: {
            server: this.url,
            'certificate-authority-data': readFileSync(path.join(TLS_DIR, 'ca.crt')).toString('base64'),
          },
        },
      ],
      users: [{ name: 'peer-user', user: { token: this.token } }],
      contexts: [{ name: 'peer', context: { cluster: 'peer', user: 'peer-user', namespace } }],
      'current-context': 'peer',
    });
  }

  /** Writes the kubeconfig into `dir`; answers its path. */
  writeKubeconfig(dir: string, namespace?: string): string {
    const file = path.join(dir, 'kubeconfig');
    writeFileSync(file, this.kubeconfig(namespace), { mode: 0o600 });
    return file;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const timers of this.jobTimers.values()) timers.forEach(clearTimeout);
    const exits: Promise<unknown>[] = [];
    for (const rt of this.runtimes.values()) {
      rt.timers.forEach(clearTimeout);
      const child = rt.process;
      if (child && child.exitCode === null && child.signalCode === null) {
        exits.push(new Promise((r) => child.once('exit', r)));
        killGroup(child, 'SIGKILL');
      }
    }
    await Promise.all(exits);
    for (const w of this.watchers) w.end();
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(r));
  }

  // ---- what tests look at and do -------------------------------------------------------------

  jobs(namespace?: string): PeerJob[] {
    return [...this.objects.jobs.values()].filter((j) => !namespace || j.metadata.namespace === namespace);
  }

  pods(namespace?: string): PeerPod[] {
    return [...this.objects.pods.values()].filter((p) => !namespace || p.metadata.namespace === namespace);
  }

  /** The pods a Job created (by its controller uid), including those it orphaned. */
  podsOf(job: PeerJob): PeerPod[] {
    return this.pods(job.metadata.namespace).filter(
      (p) => p.metadata.labels?.['batch.kubernetes.io/controller-uid'] === job.metadata.uid,
    );
  }

  /** Everything a pod's container printed so far. */
  logOf(pod: PeerPod): string {
    return this.runtimes.get(podKey(pod))?.log.text() ?? '';
  }

  /** The process running a pod's container, while it runs. */
  processOf(pod: PeerPod): ChildProcess | null {
    const child = this.runtimes.get(podKey(pod))?.process ?? null;
    return child && child.exitCode === null && child.signalCode === null ? child : null;
  }

  /**
   * Resolves with `check()`'s first truthy answer, checked now and after every change of the
   * peer's objects; rejects after `timeoutMs`.
   */
  waitFor<T>(check: () => T | undefined | null | false, what: string, timeoutMs = 60_000): Promise<T> {
    return new Promise((resolve, reject) => {
      const listener = () => {
        const value = check();
        if (!value) return;
        this.changeListeners.delete(listener);
        clearTimeout(timer);
        resolve(value);
      };
      const timer = setTimeout(() => {
        this.changeListeners.delete(listener);
        reject(new Error(`the Kubernetes peer never showed ${what}`));
      }, timeoutMs);
      this.changeListeners.add(listener);
      listener();
    });
  }

  /**
   * The next `times` requests with this verb (and resource) fail with `status`; with
   * `afterApplying`, a create takes effect first, as when a reply is lost on its way back.
   */
  failNext(
    match: { verb?: string; resource?: string },
    status: number,
    opts: { retryAfter?: number; times?: number; afterApplying?: boolean } = {},
  ): void {
    this.failures.push({
      ...match,
      status,
      retryAfter: opts.retryAfter,
      times: opts.times ?? 1,
      afterApplying: opts.afterApplying ?? false,
    });
  }

  /** Cuts every open watch connection, as a load balancer or a restarting API server would. */
  dropWatches(): void {
    for (const w of [...this.watchers]) {
      this.watchers.delete(w);
      w.res.socket?.destroy();
    }
  }

  /** The store's current resourceVersion. */
  resourceVersion(): string {
    return String(this.rv);
  }

  /** How many watches are open now. */
  openWatches(): number {
    return this.watchers.size;
  }

  /** Cuts every open log stream. */
  dropLogs(): void {
    for (const res of this.logStreams) res.socket?.destroy();
  }

  /** Ends every open watch cleanly, as the API server does after its request timeout. */
  endWatches(): void {
    for (const w of [...this.watchers]) w.end();
  }

  /** New watch requests wait until `releaseWatches()` (to make changes happen while nobody watches). */
  holdWatches(): void {
    this.held ??= [];
  }

  releaseWatches(): void {
    const held = this.held ?? [];
    this.held = null;
    for (const go of held) go();
  }

  /** Each Job creation takes `ms` before it is answered, so that concurrent ones overlap. */
  slowCreates(ms: number): void {
    this.createDelayMs = ms;
    this.peakCreatesInFlight = 0;
  }

  /** Forgets the event history: watches from any version seen so far answer 410 Gone. */
  compact(): void {
    this.compactedRv = this.rv;
    this.history.length = 0;
  }

  /** Sends a BOOKMARK with the current version to watches that asked for bookmarks. */
  bookmark(): void {
    for (const w of this.watchers)
      if (w.bookmarks)
        w.res.write(
          `${JSON.stringify({
            type: 'BOOKMARK',
            object: {
              kind: w.kind === 'jobs' ? 'Job' : 'Pod',
              apiVersion: w.kind === 'jobs' ? 'batch/v1' : 'v1',
              metadata: { resourceVersion: String(this.rv) },
            },
          })}\n`,
        );
  }

  /** Pulling this image fails from now on (ErrImagePull, then ImagePullBackOff, and again). */
  makeUnpullable(image: string): void {
    this.unpullable.add(image);
  }

  addNode(node: PeerNode): void {
    this.nodes.push(node);
    this.scheduleAll();
  }

  /** The container of a running pod exceeds its memory limit: the kernel kills it. */
  oomKill(pod: PeerPod): void {
    this.killContainer(pod, { reason: 'OOMKilled' });
  }

  /** The kubelet evicts a running pod (node pressure). */
  evict(pod: PeerPod, message = 'The node was low on resource: memory. '): void {
    this.killContainer(pod, { reason: 'Error', podReason: 'Evicted', message });
  }

  // ---- HTTP ----------------------------------------------------------------------------------

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    void this.route(req, res).catch((err: Error) => {
      if (!res.headersSent) status(res, 500, 'InternalError', `the peer failed: ${err.message}`);
      else res.destroy();
    });
  }

  private async route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const query = Object.fromEntries(url.searchParams);
    if (req.headers.authorization !== `Bearer ${this.token}`)
      return status(res, 401, 'Unauthorized', 'Unauthorized');
    const m =
      /^\/(?:api\/v1|apis\/(batch)\/v1)\/namespaces\/([a-z0-9-]+)\/(jobs|pods)(?:\/([a-z0-9.-]+)(?:\/(log))?)?$/.exec(
        url.pathname,
      );
    if (!m || (m[1] === 'batch') !== (m[3] === 'jobs'))
      return status(res, 404, 'NotFound', 'the server could not find the requested resource');
    const group = m[1] ?? '';
    const [namespace, kind, name, sub] = [m[2], m[3] as Kind, m[4], m[5]];
    const watching = query.watch === 'true' || query.watch === '1';
    const verb =
      req.method === 'POST' && !name
        ? 'create'
        : req.method === 'DELETE' && name && !sub
          ? 'delete'
          : req.method === 'GET'
            ? name
              ? 'get'
              : watching
                ? 'watch'
                : 'list'
            : null;
    if (!verb)
      return status(
        res,
        405,
        'MethodNotAllowed',
        `the server does not allow this method on the requested resource`,
      );
    const resource = sub ? `${kind}/${sub}` : kind;
    const call: PeerCall = { verb, group, resource, namespace, name, query };
    this.calls.push(call);
    res.once('finish', () => (call.status = res.statusCode));
    if (!this.allowed(group, resource, verb, namespace)) {
      const who = `system:serviceaccount:${this.opts.rbacNamespace ?? namespace}:${this.opts.serviceAccount ?? 'default'}`;
      const what = group ? `${resource}.${group}` : resource;
      return status(
        res,
        403,
        'Forbidden',
        `${what}${name ? ` "${name}"` : ''} is forbidden: User "${who}" cannot ${verb} resource "${resource}" in API group "${group}" in the namespace "${namespace}"`,
      );
    }
    if (this.injectFailure(res, verb, resource, false)) return;
    if (verb === 'create' && this.createDelayMs) {
      this.peakCreatesInFlight = Math.max(this.peakCreatesInFlight, ++this.createsInFlight);
      await new Promise((r) => setTimeout(r, this.createDelayMs));
      this.createsInFlight--;
    }
    const body = req.method === 'POST' || req.method === 'DELETE' ? await readJson(req) : undefined;
    if (body === INVALID) return status(res, 400, 'BadRequest', 'the request body is not JSON');
    if (sub === 'log') return this.serveLog(res, namespace, name!, query);
    if (verb === 'watch') return this.watch(res, kind, namespace, query);
    if (verb === 'list') {
      const selector = parseSelector(query.labelSelector);
      if (!selector)
        return status(res, 400, 'BadRequest', `unable to parse requirement: "${query.labelSelector}"`);
      const items = [...this.objects[kind].values()].filter(
        (o) => o.metadata.namespace === namespace && selector(o.metadata.labels),
      );
      return json(res, 200, {
        apiVersion: kind === 'jobs' ? 'batch/v1' : 'v1',
        kind: kind === 'jobs' ? 'JobList' : 'PodList',
        metadata: { resourceVersion: String(this.rv) },
        items,
      });
    }
    const key = `${namespace}/${name}`;
    const what = kind === 'jobs' ? 'jobs.batch' : 'pods';
    if (verb === 'get') {
      const found = this.objects[kind].get(key);
      return found ? json(res, 200, found) : notFound(res, what, name!);
    }
    if (verb === 'delete') {
      const job = this.objects.jobs.get(key);
      if (kind !== 'jobs' || !job) return notFound(res, what, name!);
      const options = (body ?? {}) as { propagationPolicy?: string };
      const policy = query.propagationPolicy ?? options.propagationPolicy ?? 'Orphan';
      if (!['Orphan', 'Background', 'Foreground'].includes(policy))
        return status(res, 422, 'Invalid', `propagationPolicy: Unsupported value: "${policy}"`);
      this.deleteJob(job, policy);
      return json(res, 200, {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Success',
        details: { name, group: 'batch', kind: 'jobs', uid: job.metadata.uid },
      });
    }
    // create
    if (kind !== 'jobs')
      return status(res, 405, 'MethodNotAllowed', 'the peer creates pods through Jobs only');
    const problems = validateJob(body);
    if (problems.length)
      return status(
        res,
        422,
        'Invalid',
        `Job.batch "${String((body as PeerJob)?.metadata?.name)}" is invalid: ${problems.join(', ')}`,
      );
    const job = body as PeerJob;
    const jobName =
      job.metadata.name ?? `${job.metadata.generateName}${randomBytes(3).toString('hex').slice(0, 5)}`;
    if (job.metadata.namespace && job.metadata.namespace !== namespace)
      return status(
        res,
        400,
        'BadRequest',
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    if (this.objects.jobs.has(`${namespace}/${jobName}`))
      return status(res, 409, 'AlreadyExists', `jobs.batch "${jobName}" already exists`, {
        name: jobName,
        group: 'batch',
        kind: 'jobs',
      });
    const created = this.createJob(job, jobName, namespace);
    if (!this.injectFailure(res, verb, resource, true)) json(res, 201, created);
  }

  /** Answers the request with an injected failure, if one is due; says whether it did. */
  private injectFailure(res: http.ServerResponse, verb: string, resource: string, applied: boolean): boolean {
    const failure = this.failures.find(
      (f) =>
        f.afterApplying === applied &&
        (!f.verb || f.verb === verb) &&
        (!f.resource || f.resource === resource),
    );
    if (!failure) return false;
    if (--failure.times <= 0) this.failures.splice(this.failures.indexOf(failure), 1);
    if (failure.retryAfter !== undefined) res.setHeader('Retry-After', String(failure.retryAfter));
    if (failure.status === 429)
      status(res, 429, 'TooManyRequests', 'Too many requests, please try again later.');
    else status(res, failure.status, 'InternalError', 'Internal error occurred: injected by the test');
    return true;
  }

  private allowed(group: string, resource: string, verb: string, namespace: string): boolean {
    if (!this.opts.rules) return true;
    if (this.opts.rbacNamespace && namespace !== this.opts.rbacNamespace) return false;
    return this.opts.rules.some(
      (r) =>
        (r.apiGroups.includes(group) || r.apiGroups.includes('*')) &&
        (r.resources.includes(resource) || r.resources.includes('*')) &&
        (r.verbs.includes(verb) || r.verbs.includes('*')),
    );
  }

  private watch(
    res: http.ServerResponse,
    kind: Kind,
    namespace: string,
    query: Record<string, string>,
  ): void {
    const selector = parseSelector(query.labelSelector);
    if (!selector)
      return status(res, 400, 'BadRequest', `unable to parse requirement: "${query.labelSelector}"`);
    const start = () => {
      if (res.destroyed || this.stopped) return;
      res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
      res.flushHeaders();
      const from = query.resourceVersion;
      const send = (type: string, object: unknown) => res.write(`${JSON.stringify({ type, object })}\n`);
      if (from === undefined || from === '' || from === '0') {
        // "Get state and start at most recent": the current objects as ADDED, then changes.
        for (const o of this.objects[kind].values())
          if (o.metadata.namespace === namespace && selector(o.metadata.labels)) send('ADDED', o);
      } else {
        const rv = Number(from);
        if (!Number.isSafeInteger(rv) || rv < this.compactedRv) {
          send('ERROR', {
            kind: 'Status',
            apiVersion: 'v1',
            metadata: {},
            status: 'Failure',
            message: `too old resource version: ${from} (${this.compactedRv})`,
            reason: 'Expired',
            code: 410,
          });
          res.end();
          return;
        }
        for (const e of this.history)
          if (
            e.rv > rv &&
            e.kind === kind &&
            e.object.metadata.namespace === namespace &&
            selector(e.object.metadata.labels)
          )
            send(e.type, e.object);
      }
      const watcher: Watcher = {
        kind,
        namespace,
        selector,
        res,
        bookmarks: query.allowWatchBookmarks === 'true',
        end: () => {
          this.watchers.delete(watcher);
          clearTimeout(timeout);
          res.end();
        },
      };
      const seconds = Number(query.timeoutSeconds);
      const timeout = setTimeout(() => watcher.end(), seconds > 0 ? seconds * 1000 : 2 ** 31 - 1);
      timeout.unref();
      this.watchers.add(watcher);
      this.changed();
      res.once('close', () => {
        this.watchers.delete(watcher);
        clearTimeout(timeout);
        this.changed();
      });
    };
    if (this.held) this.held.push(start);
    else start();
  }

  private serveLog(
    res: http.ServerResponse,
    namespace: string,
    name: string,
    query: Record<string, string>,
  ): void {
    const pod = this.objects.pods.get(`${namespace}/${name}`);
    if (!pod) return notFound(res, 'pods', name);
    const container = query.container ?? pod.spec.containers[0].name;
    const cs = pod.status.containerStatuses?.find((c) => c.name === container);
    if (!pod.spec.containers.some((c) => c.name === container))
      return status(res, 400, 'BadRequest', `container ${container} is not valid for pod ${name}`);
    const runtime = this.runtimes.get(podKey(pod));
    if (!runtime || !cs || cs.state.waiting)
      return status(
        res,
        400,
        'BadRequest',
        `container "${container}" in pod "${name}" is waiting to start: ${cs?.state.waiting?.reason ?? 'ContainerCreating'}`,
      );
    const since = query.sinceTime ? Date.parse(query.sinceTime) : NaN;
    res.writeHead(200, { 'content-type': 'text/plain', 'transfer-encoding': 'chunked' });
    res.flushHeaders();
    const stop = runtime.log.serve(
      { write: (s) => res.write(s), end: () => res.end() },
      {
        follow: query.follow === 'true',
        timestamps: query.timestamps === 'true',
        // The kubelet receives sinceTime to the second.
        sinceMs: Number.isNaN(since) ? null : Math.floor(since / 1000) * 1000,
      },
    );
    this.logStreams.add(res);
    res.once('close', () => {
      this.logStreams.delete(res);
      stop();
    });
  }

  // ---- the store -----------------------------------------------------------------------------

  private commit(kind: Kind, type: EventType, object: KObject): void {
    object.metadata.resourceVersion = String(++this.rv);
    const key = `${object.metadata.namespace}/${object.metadata.name}`;
    if (type === 'DELETED') this.objects[kind].delete(key);
    else (this.objects[kind] as Map<string, KObject>).set(key, object);
    const snapshot = structuredClone(object);
    this.history.push({ rv: this.rv, kind, type, object: snapshot });
    if (this.history.length > HISTORY_LIMIT) {
      const dropped = this.history.splice(0, this.history.length - HISTORY_LIMIT);
      this.compactedRv = dropped[dropped.length - 1].rv;
    }
    for (const w of this.watchers)
      if (w.kind === kind && w.namespace === object.metadata.namespace && w.selector(object.metadata.labels))
        w.res.write(`${JSON.stringify({ type, object: snapshot })}\n`);
    this.changed();
  }

  private changed(): void {
    for (const listener of [...this.changeListeners]) listener();
  }

  // ---- the job controller --------------------------------------------------------------------

  private createJob(job: PeerJob, name: string, namespace: string): PeerJob {
    const now = kubeTime();
    const uid = randomUUID();
    job.metadata = {
      ...job.metadata,
      name,
      namespace,
      uid,
      creationTimestamp: now,
      generation: 1,
      resourceVersion: '',
    };
    job.spec.completionMode ??= 'NonIndexed';
    job.spec.completions ??= 1;
    job.spec.parallelism ??= 1;
    job.spec.backoffLimit ??= 6;
    const selectorLabels = { 'batch.kubernetes.io/controller-uid': uid };
    job.spec.selector = { matchLabels: selectorLabels };
    job.spec.template.metadata = {
      ...job.spec.template.metadata,
      labels: {
        ...job.spec.template.metadata?.labels,
        ...selectorLabels,
        'batch.kubernetes.io/job-name': name,
        'controller-uid': uid,
        'job-name': name,
      },
    };
    job.status = { startTime: now, active: 0, ready: 0, terminating: 0 };
    this.commit('jobs', 'ADDED', job);
    const timers: NodeJS.Timeout[] = [];
    this.jobTimers.set(`${namespace}/${name}`, timers);
    if (job.spec.activeDeadlineSeconds !== undefined)
      timers.push(setTimeout(() => this.deadline(job), job.spec.activeDeadlineSeconds * 1000));
    const indexes = job.spec.completionMode === 'Indexed' ? job.spec.completions : 1;
    for (let i = 0; i < Math.min(indexes, job.spec.parallelism); i++)
      this.createPod(job, indexes > 1 ? i : null);
    return job;
  }

  private createPod(job: PeerJob, index: number | null): void {
    const labels = { ...job.spec.template.metadata!.labels };
    const annotations: Record<string, string> = {};
    const spec = structuredClone(job.spec.template.spec);
    if (job.spec.completionMode === 'Indexed') {
      const i = String(index ?? 0);
      labels['batch.kubernetes.io/job-completion-index'] = i;
      annotations['batch.kubernetes.io/job-completion-index'] = i;
      for (const c of spec.containers) c.env = [...(c.env ?? []), { name: 'JOB_COMPLETION_INDEX', value: i }];
    }
    const suffix = randomBytes(4).toString('hex').slice(0, 5);
    const pod: PeerPod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: `${job.metadata.name}-${job.spec.completionMode === 'Indexed' ? `${index ?? 0}-` : ''}${suffix}`,
        generateName: `${job.metadata.name}-`,
        namespace: job.metadata.namespace,
        uid: randomUUID(),
        resourceVersion: '',
        creationTimestamp: kubeTime(),
        labels,
        annotations,
        ownerReferences: [
          {
            apiVersion: 'batch/v1',
            kind: 'Job',
            name: job.metadata.name,
            uid: job.metadata.uid,
            controller: true,
          },
        ],
      },
      spec: { terminationGracePeriodSeconds: 30, ...spec },
      status: {
        phase: 'Pending',
        qosClass: Object.keys(podRequests(spec)).length ? 'Burstable' : 'BestEffort',
      },
    };
    this.runtimes.set(podKey(pod), {
      process: null,
      log: new ContainerLog(() => this.changed()),
      timers: [],
    });
    this.commit('pods', 'ADDED', pod);
    job.status.active = (job.status.active ?? 0) + 1;
    this.commit('jobs', 'MODIFIED', job);
    setImmediate(() => this.scheduleOne(pod));
  }

  /** Brings a Job's status up to date after a change of its pods. */
  private syncJob(job: PeerJob): void {
    if (!this.objects.jobs.has(`${job.metadata.namespace}/${job.metadata.name}`)) return;
    const pods = this.podsOf(job);
    const live = pods.filter((p) => !TERMINAL.has(p.status.phase));
    job.status.active = live.filter((p) => !p.metadata.deletionTimestamp).length;
    job.status.terminating = live.filter((p) => p.metadata.deletionTimestamp).length;
    job.status.ready = live.filter((p) => p.status.containerStatuses?.some((c) => c.ready)).length;
    const conditions = (job.status.conditions ??= []);
    const has = (type: string) => conditions.some((c) => c.type === type && c.status === 'True');
    if (has('Complete') || has('Failed')) return this.commit('jobs', 'MODIFIED', job);
    const target = conditions.find((c) => c.type === 'FailureTarget');
    if (!target && (job.status.failed ?? 0) > (job.spec.backoffLimit ?? 6)) {
      this.failJob(job, 'BackoffLimitExceeded', 'Job has reached the specified backoff limit');
      return;
    }
    if (target) {
      if (live.length === 0) this.finishJob(job, 'Failed', target.reason!, target.message!);
      else this.commit('jobs', 'MODIFIED', job);
      return;
    }
    if ((job.status.succeeded ?? 0) >= job.spec.completions!) {
      if (job.spec.completionMode === 'Indexed')
        job.status.completedIndexes = `0-${job.spec.completions! - 1}`;
      job.status.completionTime = kubeTime();
      this.finishJob(job, 'Complete', undefined, undefined);
      return;
    }
    // A failed pod within the backoff limit is replaced (never the case with backoffLimit 0).
    if (job.status.active === 0 && job.status.terminating === 0) this.createPod(job, null);
    else this.commit('jobs', 'MODIFIED', job);
  }

  /** The Job is going to fail: its remaining pods are stopped, then it fails. */
  private failJob(job: PeerJob, reason: string, message: string): void {
    const now = kubeTime();
    job.status.conditions = [
      ...(job.status.conditions ?? []),
      { type: 'FailureTarget', status: 'True', reason, message, lastProbeTime: now, lastTransitionTime: now },
    ];
    this.commit('jobs', 'MODIFIED', job);
    for (const pod of this.podsOf(job)) if (!TERMINAL.has(pod.status.phase)) this.deletePod(pod);
    this.syncJob(job);
  }

  private finishJob(job: PeerJob, type: 'Complete' | 'Failed', reason?: string, message?: string): void {
    const now = kubeTime();
    job.status.conditions = [
      ...(job.status.conditions ?? []),
      ...(type === 'Complete'
        ? [
            {
              type: 'SuccessCriteriaMet',
              status: 'True' as const,
              reason: 'CompletionsReached',
              message: 'Reached expected number of succeeded pods',
              lastProbeTime: now,
              lastTransitionTime: now,
            },
          ]
        : []),
      {
        type,
        status: 'True',
        ...(type === 'Complete'
          ? { reason: 'CompletionsReached', message: 'Reached expected number of succeeded pods' }
          : { reason, message }),
        lastProbeTime: now,
        lastTransitionTime: now,
      },
    ];
    this.commit('jobs', 'MODIFIED', job);
    this.jobTimers.get(`${job.metadata.namespace}/${job.metadata.name}`)?.forEach(clearTimeout);
    if (job.spec.ttlSecondsAfterFinished !== undefined) {
      const timer = setTimeout(() => {
        if (this.objects.jobs.get(`${job.metadata.namespace}/${job.metadata.name}`) === job)
          this.deleteJob(job, 'Background');
      }, job.spec.ttlSecondsAfterFinished * 1000);
      this.jobTimers.set(`${job.metadata.namespace}/${job.metadata.name}`, [timer]);
    }
  }

  private deadline(job: PeerJob): void {
    const done = job.status.conditions?.some((c) => ['Complete', 'Failed', 'FailureTarget'].includes(c.type));
    if (!done && this.objects.jobs.get(`${job.metadata.namespace}/${job.metadata.name}`) === job)
      this.failJob(job, 'DeadlineExceeded', 'Job was active longer than specified deadline');
  }

  private deleteJob(job: PeerJob, policy: string): void {
    const key = `${job.metadata.namespace}/${job.metadata.name}`;
    this.jobTimers.get(key)?.forEach(clearTimeout);
    this.jobTimers.delete(key);
    const pods = this.podsOf(job);
    if (policy === 'Orphan') {
      for (const pod of pods) {
        pod.metadata.ownerReferences = [];
        this.commit('pods', 'MODIFIED', pod);
      }
      this.commit('jobs', 'DELETED', job);
      return;
    }
    if (policy === 'Foreground') {
      job.metadata.deletionTimestamp = kubeTime();
      job.metadata.finalizers = ['foregroundDeletion'];
      this.commit('jobs', 'MODIFIED', job);
      for (const pod of pods) this.deletePod(pod);
      void this.waitFor(() => this.podsOf(job).length === 0, 'the pods gone')
        .then(() => {
          job.metadata.finalizers = [];
          this.commit('jobs', 'DELETED', job);
        })
        .catch(() => undefined);
      return;
    }
    this.commit('jobs', 'DELETED', job);
    // The garbage collector deletes the dependents afterwards.
    setImmediate(() => pods.forEach((pod) => this.deletePod(pod)));
  }

  // ---- the scheduler and the kubelet ---------------------------------------------------------

  private scheduleAll(): void {
    for (const pod of this.objects.pods.values()) if (!pod.spec.nodeName) this.scheduleOne(pod);
  }

  private scheduleOne(pod: PeerPod): void {
    if (this.stopped || pod.spec.nodeName || pod.metadata.deletionTimestamp || !this.isCurrent(pod)) return;
    const used = (node: string) => {
      const total: Record<string, number> = {};
      for (const p of this.objects.pods.values())
        if (p.spec.nodeName === node && !TERMINAL.has(p.status.phase))
          for (const [name, n] of Object.entries(podRequests(p.spec))) total[name] = (total[name] ?? 0) + n;
      return total;
    };
    const now = kubeTime();
    const placed = schedule(pod.spec, this.nodes, used, this.opts.claims ?? {});
    if ('message' in placed) {
      const current = pod.status.conditions?.find((c) => c.type === 'PodScheduled');
      if (current?.message === placed.message) return;
      pod.status.conditions = [
        {
          type: 'PodScheduled',
          status: 'False',
          reason: 'Unschedulable',
          message: placed.message,
          lastProbeTime: null,
          lastTransitionTime: now,
        },
      ];
      this.commit('pods', 'MODIFIED', pod);
      return;
    }
    pod.spec.nodeName = placed.node;
    pod.status = {
      ...pod.status,
      hostIP: '10.0.0.1',
      startTime: now,
      conditions: [
        { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: now },
        { type: 'Initialized', status: 'True', lastProbeTime: null, lastTransitionTime: now },
        {
          type: 'Ready',
          status: 'False',
          reason: 'ContainersNotReady',
          lastProbeTime: null,
          lastTransitionTime: now,
        },
        {
          type: 'ContainersReady',
          status: 'False',
          reason: 'ContainersNotReady',
          lastProbeTime: null,
          lastTransitionTime: now,
        },
      ],
      containerStatuses: pod.spec.containers.map((c) => ({
        name: c.name,
        image: c.image,
        imageID: '',
        ready: false,
        started: false,
        restartCount: 0,
        state: { waiting: { reason: 'ContainerCreating' } },
        lastState: {},
      })),
    };
    this.commit('pods', 'MODIFIED', pod);
    setImmediate(() => this.pull(pod, 0));
  }

  private pull(pod: PeerPod, attempt: number): void {
    if (this.stopped || pod.metadata.deletionTimestamp || !this.isCurrent(pod)) return;
    const container = pod.spec.containers[0];
    if (!this.unpullable.has(container.image)) return this.startContainer(pod);
    const cs = pod.status.containerStatuses![0];
    cs.state =
      attempt % 2 === 0
        ? {
            waiting: {
              reason: 'ErrImagePull',
              message: `rpc error: code = NotFound desc = failed to pull and unpack image "${container.image}": not found`,
            },
          }
        : { waiting: { reason: 'ImagePullBackOff', message: `Back-off pulling image "${container.image}"` } };
    this.commit('pods', 'MODIFIED', pod);
    const runtime = this.runtimes.get(podKey(pod))!;
    runtime.timers.push(setTimeout(() => this.pull(pod, attempt + 1), this.opts.imagePullRetryMs ?? 200));
  }

  private startContainer(pod: PeerPod): void {
    const container = pod.spec.containers[0];
    const cs = pod.status.containerStatuses![0];
    const mounts = hostMounts(container, pod.spec.volumes ?? [], this.opts.claims ?? {});
    const environment = containerEnvironment(container, {
      KUBERNETES_SERVICE_HOST: '127.0.0.1',
      KUBERNETES_SERVICE_PORT: new URL(this.url).port,
    });
    if ('error' in mounts || 'error' in environment) {
      const message = 'error' in mounts ? mounts.error : (environment as { error: string }).error;
      cs.state = { waiting: { reason: 'CreateContainerConfigError', message } };
      this.commit('pods', 'MODIFIED', pod);
      return;
    }
    for (const dir of mounts.dirs) mkdirSync(dir, { recursive: true });
    const runtime = this.runtimes.get(podKey(pod))!;
    const env = {
      HOSTNAME: pod.metadata.name,
      PATH: this.opts.path ?? process.env.PATH ?? '/usr/bin:/bin',
      ...environment.env,
    };
    const [command, ...args] = environment.argv;
    const cwd = container.workingDir ?? '/';
    mkdirSync(cwd, { recursive: true });
    // Its own process group stands for the container: stopping it stops everything in it.
    const child = spawn(command, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    runtime.process = child;
    const startedAt = kubeTime();
    child.once('spawn', () => {
      if (!this.isCurrent(pod)) return killGroup(child, 'SIGKILL');
      cs.state = { running: { startedAt } };
      cs.started = cs.ready = true;
      pod.status.phase = 'Running';
      pod.status.podIP = '10.1.0.1';
      for (const c of pod.status.conditions ?? [])
        if (c.type === 'Ready' || c.type === 'ContainersReady')
          Object.assign(c, { status: 'True', reason: undefined });
      this.commit('pods', 'MODIFIED', pod);
      this.syncOwner(pod);
    });
    for (const stream of ['stdout', 'stderr'] as const) {
      child[stream]!.setEncoding('utf8');
      child[stream]!.on('data', (chunk: string) => runtime.log.push(stream, chunk));
    }
    child.once('error', (err) => {
      runtime.log.end();
      this.terminated(pod, {
        exitCode: 128,
        reason: 'StartError',
        message: `failed to create containerd task: exec: "${command}": ${err.message}`,
        finishedAt: kubeTime(),
      });
    });
    // When its first process ends, a container's other processes end with it.
    child.once('exit', () => killGroup(child, 'SIGKILL'));
    child.once('close', (code, signal) => {
      if (!cs.state.running) return; // never started: reported by 'error'
      runtime.log.end();
      const killed = runtime.killedAs;
      const exitCode = code ?? 128 + (signal ? constants.signals[signal] : 0);
      this.terminated(
        pod,
        {
          exitCode,
          reason: killed?.reason ?? (exitCode === 0 ? 'Completed' : 'Error'),
          startedAt,
          finishedAt: kubeTime(),
          containerID: `containerd://${pod.metadata.uid.replaceAll('-', '')}`,
        },
        killed?.podReason,
        killed?.message,
      );
    });
  }

  private terminated(
    pod: PeerPod,
    state: NonNullable<ContainerState['terminated']>,
    podReason?: string,
    podMessage?: string,
  ): void {
    if (!this.isCurrent(pod)) return;
    const runtime = this.runtimes.get(podKey(pod))!;
    runtime.timers.forEach(clearTimeout);
    const cs = pod.status.containerStatuses![0];
    cs.state = { terminated: state };
    cs.ready = cs.started = false;
    pod.status.phase = state.exitCode === 0 && !podReason ? 'Succeeded' : 'Failed';
    if (podReason) {
      pod.status.reason = podReason;
      pod.status.message = podMessage;
      pod.status.conditions = [
        ...(pod.status.conditions ?? []),
        {
          type: 'DisruptionTarget',
          status: 'True',
          reason: 'TerminationByKubelet',
          message: podMessage,
          lastProbeTime: null,
          lastTransitionTime: kubeTime(),
        },
      ];
    }
    for (const c of pod.status.conditions ?? [])
      if (c.type === 'Ready' || c.type === 'ContainersReady')
        Object.assign(c, { status: 'False', reason: 'PodCompleted' });
    this.commit('pods', 'MODIFIED', pod);
    const job = this.ownerOf(pod);
    if (job) {
      if (pod.status.phase === 'Succeeded') job.status.succeeded = (job.status.succeeded ?? 0) + 1;
      else job.status.failed = (job.status.failed ?? 0) + 1;
    }
    if (pod.metadata.deletionTimestamp) this.commit('pods', 'DELETED', pod);
    if (job) this.syncJob(job);
    this.scheduleAll();
  }

  /** Graceful deletion: SIGTERM, SIGKILL after the grace period, gone once stopped. */
  private deletePod(pod: PeerPod): void {
    if (pod.metadata.deletionTimestamp || !this.isCurrent(pod)) return;
    const grace = pod.spec.terminationGracePeriodSeconds ?? 30;
    pod.metadata.deletionTimestamp = kubeTime(new Date(Date.now() + grace * 1000));
    pod.metadata.deletionGracePeriodSeconds = grace;
    const runtime = this.runtimes.get(podKey(pod))!;
    const child = runtime.process;
    if (child && pod.status.containerStatuses?.[0].state.running) {
      this.commit('pods', 'MODIFIED', pod);
      killGroup(child, 'SIGTERM');
      runtime.timers.push(setTimeout(() => killGroup(child, 'SIGKILL'), grace * 1000));
      return;
    }
    // Not started yet (or already ended): nothing to wait for.
    if (child) killGroup(child, 'SIGKILL');
    runtime.timers.forEach(clearTimeout);
    this.commit('pods', 'DELETED', pod);
    this.syncOwner(pod);
    this.scheduleAll();
  }

  private killContainer(pod: PeerPod, as: Runtime['killedAs']): void {
    const current = this.objects.pods.get(podKey(pod));
    const runtime = current && this.runtimes.get(podKey(current));
    if (!runtime?.process || !current?.status.containerStatuses?.[0].state.running)
      throw new Error(`pod ${pod.metadata.name} has no running container`);
    runtime.killedAs = as;
    killGroup(runtime.process, 'SIGKILL');
  }

  private syncOwner(pod: PeerPod): void {
    const job = this.ownerOf(pod);
    if (job) this.syncJob(job);
  }

  private ownerOf(pod: PeerPod): PeerJob | undefined {
    const ref = pod.metadata.ownerReferences?.find((r) => r.kind === 'Job');
    const job = ref && this.objects.jobs.get(`${pod.metadata.namespace}/${ref.name}`);
    return job && job.metadata.uid === ref.uid ? job : undefined;
  }

  private isCurrent(pod: PeerPod): boolean {
    return this.objects.pods.get(podKey(pod)) === pod;
  }
}

function podKey(pod: PeerPod): string {
  return `${pod.metadata.namespace}/${pod.metadata.name}`;
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // already gone
  }
}

const INVALID = Symbol('invalid');

async function readJson(req: http.IncomingMessage): Promise<unknown> {
  let raw = '';
  for await (const chunk of req) raw += chunk;
  if (!raw) return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return INVALID;
  }
}

function json(res: http.ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function status(
  res: http.ServerResponse,
  code: number,
  reason: string,
  message: string,
  details?: object,
): void {
  json(res, code, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    details,
    code,
  });
}

function notFound(res: http.ServerResponse, what: string, name: string): void {
  const [kind, group = ''] = what.split('.');
  status(res, 404, 'NotFound', `${what} "${name}" not found`, { name, group, kind });
}

/**
 * Equality- and set-based label selectors: `a=b`, `a==b`, `a!=b`, `a`, `!a`, `a in (x,y)`,
 * `a notin (x)`, joined by commas. Answers null when the selector cannot be parsed.
 */
export function parseSelector(
  text: string | undefined,
): ((labels: Record<string, string> | undefined) => boolean) | null {
  if (!text) return () => true;
  const tests: ((labels: Record<string, string>) => boolean)[] = [];
  for (const part of text.match(/(?:[^,(]+|\([^)]*\))+/g) ?? []) {
    const p = part.trim();
    let m: RegExpExecArray | null;
    if ((m = /^([\w./-]+)\s*(==|=|!=)\s*([\w.-]*)$/.exec(p))) {
      const [, key, op, value] = m;
      tests.push((l) => (op === '!=' ? l[key] !== value : l[key] === value));
    } else if ((m = /^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(p))) {
      const [, key, op, list] = m;
      const values = list.split(',').map((v) => v.trim());
      tests.push((l) =>
        op === 'in' ? key in l && values.includes(l[key]) : !(key in l) || !values.includes(l[key]),
      );
    } else if ((m = /^(!?)([\w./-]+)$/.exec(p))) {
      const [, not, key] = m;
      tests.push((l) => (not ? !(key in l) : key in l));
    } else return null;
  }
  return (labels) => tests.every((t) => t(labels ?? {}));
}

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The API server's validation of what the executor sends, in its words. */
function validateJob(body: unknown): string[] {
  const problems: string[] = [];
  const job = body as PeerJob | undefined;
  if (!job || job.kind !== 'Job' || job.apiVersion !== 'batch/v1')
    return ['kind/apiVersion: expected batch/v1 Job'];
  const name = job.metadata?.name;
  if (name === undefined && !job.metadata?.generateName) problems.push('metadata.name: Required value');
  if (name !== undefined && (!DNS_SUBDOMAIN.test(name) || name.length > 63))
    problems.push(
      `metadata.name: Invalid value: "${name}": must be no more than 63 characters and a DNS-1123 subdomain`,
    );
  const checkLabels = (at: string, labels: Record<string, string> | undefined) => {
    for (const [k, v] of Object.entries(labels ?? {})) {
      if (!LABEL_KEY.test(k)) problems.push(`${at}: Invalid value: "${k}": not a qualified name`);
      if (typeof v !== 'string' || v.length > 63 || !LABEL_VALUE.test(v))
        problems.push(`${at}: Invalid value: "${String(v)}": a valid label must be 63 characters or less`);
    }
  };
  checkLabels('metadata.labels', job.metadata?.labels);
  const template = job.spec?.template;
  if (!template?.spec) return [...problems, 'spec.template.spec: Required value'];
  checkLabels('spec.template.metadata.labels', template.metadata?.labels);
  const restart = template.spec.restartPolicy;
  if (restart !== 'Never' && restart !== 'OnFailure')
    problems.push(
      `spec.template.spec.restartPolicy: Unsupported value: "${restart}": supported values: "OnFailure", "Never"`,
    );
  const containers = template.spec.containers ?? [];
  if (!containers.length) problems.push('spec.template.spec.containers: Required value');
  containers.forEach((c, i) => {
    if (!c.name) problems.push(`spec.template.spec.containers[${i}].name: Required value`);
    if (!c.image) problems.push(`spec.template.spec.containers[${i}].image: Required value`);
    for (const m of c.volumeMounts ?? []) {
      if (!(template.spec.volumes ?? []).some((v) => v.name === m.name))
        problems.push(`spec.template.spec.containers[${i}].volumeMounts.name: Not found: "${m.name}"`);
      if (m.subPath && (path.isAbsolute(m.subPath) || m.subPath.split('/').includes('..')))
        problems.push(
          `spec.template.spec.containers[${i}].volumeMounts.subPath: Invalid value: "${m.subPath}"`,
        );
    }
  });
  for (const field of [
    'backoffLimit',
    'activeDeadlineSeconds',
    'ttlSecondsAfterFinished',
    'completions',
    'parallelism',
  ] as const) {
    const v = job.spec[field];
    if (
      v !== undefined &&
      (!Number.isSafeInteger(v) || (v as number) < (field === 'activeDeadlineSeconds' ? 1 : 0))
    )
      problems.push(`spec.${field}: Invalid value: ${String(v)}`);
  }
  return problems;
}
