/**
 * The node side of the Kubernetes test peer (kubernetes-peer.ts): what the scheduler and the
 * kubelet do with a pod. Scheduling by node selector, taints and resource requests; `$(VAR)`
 * expansion as Kubernetes does it; volume mounts of claims; logs as the log endpoint serves them.
 */
import path from 'node:path';

export interface Toleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
}

export interface Taint {
  key: string;
  value?: string;
  effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
}

export interface PeerNode {
  name: string;
  labels?: Record<string, string>;
  /** Allocatable resources: `cpu`, `memory`, `nvidia.com/gpu`, ... as quantities. */
  capacity?: Record<string, string>;
  taints?: Taint[];
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: unknown;
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  subPath?: string;
}

export interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  env?: EnvVar[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  volumeMounts?: VolumeMount[];
}

export interface Volume {
  name: string;
  persistentVolumeClaim?: { claimName: string };
}

export interface PodSpec {
  containers: Container[];
  restartPolicy?: string;
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  tolerations?: Toleration[];
  volumes?: Volume[];
  terminationGracePeriodSeconds?: number;
  activeDeadlineSeconds?: number;
  [more: string]: unknown;
}

/**
 * Kubernetes' `$(VAR)` expansion (k8s.io/kubernetes third_party/forked/golang/expansion):
 * `$(NAME)` becomes the variable's value, or stays as written when it is not defined; `$$`
 * becomes `$`; any other `$` is kept, as is an unclosed `$(`.
 */
export function expand(input: string, lookup: (name: string) => string | undefined): string {
  let out = '';
  let checkpoint = 0;
  for (let cursor = 0; cursor < input.length; cursor++) {
    if (input[cursor] !== '$' || cursor + 1 >= input.length) continue;
    out += input.slice(checkpoint, cursor);
    const rest = input.slice(cursor + 1);
    let read: string;
    let advance = 1;
    if (rest[0] === '$') read = '$';
    else if (rest[0] === '(') {
      const close = rest.indexOf(')', 1);
      if (close === -1) read = '$(';
      else {
        const name = rest.slice(1, close);
        read = lookup(name) ?? `$(${name})`;
        advance = close + 1;
      }
    } else read = `$${rest[0]}`;
    out += read;
    cursor += advance;
    checkpoint = cursor + 1;
  }
  return out + input.slice(checkpoint);
}

/**
 * A container's environment as the kubelet builds it: each value may refer to the variables
 * defined before it (and to the service variables); then its command and args are expanded
 * with all of them.
 */
export function containerEnvironment(
  container: Container,
  serviceEnv: Record<string, string>,
): { env: Record<string, string>; argv: string[] } | { error: string } {
  const env: Record<string, string> = {};
  for (const v of container.env ?? []) {
    if (v.valueFrom !== undefined)
      return { error: `the test peer does not support valueFrom (variable ${v.name})` };
    env[v.name] = expand(v.value ?? '', (name) => env[name] ?? serviceEnv[name]);
  }
  const all = { ...serviceEnv, ...env };
  const lookup = (name: string) => (Object.hasOwn(all, name) ? all[name] : undefined);
  const argv = [...(container.command ?? []), ...(container.args ?? [])].map((a) => expand(a, lookup));
  if (!container.command?.length)
    return { error: `the test peer has no image entrypoints; container "${container.name}" needs a command` };
  return { env: all, argv };
}

const SUFFIXES: Record<string, number> = {
  '': 1,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** A resource quantity (`500m`, `64Gi`, `1e3`, `2`) as a number. */
export function parseQuantity(q: string | number): number {
  const m = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:[eE]([+-]?\d+)|(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei))?$/.exec(
    String(q),
  );
  if (!m) throw new Error(`quantities must match the regular expression of Kubernetes: "${q}"`);
  return Number(m[1]) * (m[2] !== undefined ? 10 ** Number(m[2]) : SUFFIXES[m[3] ?? '']);
}

/** What a pod asks for: requests, where a resource only has a limit, the limit (as Kubernetes defaults). */
export function podRequests(spec: PodSpec): Record<string, number> {
  const total: Record<string, number> = {};
  for (const c of spec.containers) {
    const wanted = { ...(c.resources?.limits ?? {}), ...(c.resources?.requests ?? {}) };
    for (const [name, q] of Object.entries(wanted)) total[name] = (total[name] ?? 0) + parseQuantity(q);
  }
  return total;
}

function tolerates(tolerations: Toleration[], taint: Taint): boolean {
  return tolerations.some(
    (t) =>
      (t.key === undefined || t.key === '' ? t.operator === 'Exists' : t.key === taint.key) &&
      (t.operator === 'Exists' || (t.value ?? '') === (taint.value ?? '')) &&
      (t.effect === undefined || t.effect === '' || t.effect === taint.effect),
  );
}

/**
 * Picks a node for a pod, or says why none fits in the scheduler's words:
 * `0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint {spot: true}.`
 */
export function schedule(
  spec: PodSpec,
  nodes: PeerNode[],
  used: (node: string) => Record<string, number>,
  claims: Record<string, string>,
): { node: string } | { message: string } {
  for (const v of spec.volumes ?? [])
    if (v.persistentVolumeClaim && !Object.hasOwn(claims, v.persistentVolumeClaim.claimName))
      return {
        message: `0/${nodes.length} nodes are available: persistentvolumeclaim "${v.persistentVolumeClaim.claimName}" not found.`,
      };
  const wanted = podRequests(spec);
  const reasons = new Map<string, number>();
  const count = (reason: string) => reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
  for (const node of nodes) {
    const selector = spec.nodeSelector ?? {};
    if (Object.entries(selector).some(([k, v]) => node.labels?.[k] !== v)) {
      count("node(s) didn't match Pod's node affinity/selector");
      continue;
    }
    const taint = (node.taints ?? []).find(
      (t) => t.effect !== 'PreferNoSchedule' && !tolerates(spec.tolerations ?? [], t),
    );
    if (taint) {
      count(`node(s) had untolerated taint {${taint.key}: ${taint.value ?? ''}}`);
      continue;
    }
    const free = node.capacity ?? {};
    const inUse = used(node.name);
    const short = Object.entries(wanted).filter(
      ([name, n]) =>
        n > 0 && (inUse[name] ?? 0) + n > (free[name] === undefined ? 0 : parseQuantity(free[name])),
    );
    if (short.length) {
      for (const [name] of short) count(`Insufficient ${name}`);
      continue;
    }
    return { node: node.name };
  }
  const why = [...reasons]
    .map(([reason, n]) => `${n} ${reason}`)
    .sort()
    .join(', ');
  return { message: `0/${nodes.length} nodes are available: ${why}.` };
}

/**
 * Where a container's mounts are on this host. The peer runs containers as host processes, so
 * it cannot mount anything elsewhere: a mount is only possible where the claim's directory
 * already is (mountPath equal to the claim's directory joined with subPath).
 */
export function hostMounts(
  container: Container,
  volumes: Volume[],
  claims: Record<string, string>,
): { dirs: string[] } | { error: string } {
  const dirs: string[] = [];
  for (const m of container.volumeMounts ?? []) {
    const volume = volumes.find((v) => v.name === m.name);
    if (!volume?.persistentVolumeClaim) return { error: `volume "${m.name}" is not a persistentVolumeClaim` };
    const dir = path.join(claims[volume.persistentVolumeClaim.claimName], m.subPath ?? '');
    if (path.resolve(m.mountPath) !== path.resolve(dir))
      return {
        error: `the test peer runs containers on the host: ${m.mountPath} must be where the claim holds it (${dir})`,
      };
    dirs.push(dir);
  }
  return { dirs };
}

/** Kubernetes' time text, to the second (RFC 3339). */
export function kubeTime(at = new Date()): string {
  return at.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A log line's timestamp as the log endpoint prints it: RFC 3339 with nanoseconds. */
function nanoTime(ms: number, seq: number): string {
  const iso = new Date(ms).toISOString();
  // Milliseconds from the clock; a sequence number below them keeps lines of one ms apart.
  return `${iso.slice(0, 23)}${String(seq % 1e6).padStart(6, '0')}Z`;
}

interface LogLine {
  /** Milliseconds since the epoch (for sinceTime). */
  ms: number;
  stamp: string;
  text: string;
}

/** A container's log: lines of stdout and stderr together, in the order they came. */
export class ContainerLog {
  private readonly lines: LogLine[] = [];
  private readonly partial = { stdout: '', stderr: '' };
  private readonly followers = new Set<{ write: (line: LogLine) => void; end: () => void }>();
  private seq = 0;
  ended = false;

  constructor(private readonly onLine: () => void) {}

  push(stream: 'stdout' | 'stderr', chunk: string): void {
    const text = this.partial[stream] + chunk;
    const parts = text.split('\n');
    this.partial[stream] = parts.pop()!;
    for (const line of parts) this.add(`${line}\n`);
  }

  /** The container stopped: a last line without a newline is kept as it is. */
  end(): void {
    for (const stream of ['stdout', 'stderr'] as const)
      if (this.partial[stream]) this.add(this.partial[stream]);
    this.partial.stdout = this.partial.stderr = '';
    this.ended = true;
    for (const f of this.followers) f.end();
    this.followers.clear();
  }

  /**
   * Writes the lines from `sinceMs` on (with their timestamps when asked) and, when following,
   * every later line until the container stops. Answers a function that stops following.
   */
  serve(
    out: { write: (s: string) => void; end: () => void },
    opts: { follow: boolean; timestamps: boolean; sinceMs: number | null },
  ): () => void {
    const write = (l: LogLine) => out.write(opts.timestamps ? `${l.stamp} ${l.text}` : l.text);
    for (const l of this.lines) if (opts.sinceMs === null || l.ms >= opts.sinceMs) write(l);
    if (!opts.follow || this.ended) {
      out.end();
      return () => undefined;
    }
    const follower = { write, end: () => out.end() };
    this.followers.add(follower);
    return () => this.followers.delete(follower);
  }

  text(): string {
    return this.lines.map((l) => l.text).join('');
  }

  private add(text: string): void {
    const ms = Date.now();
    const line = { ms, stamp: nanoTime(ms, this.seq++), text };
    this.lines.push(line);
    for (const f of this.followers) f.write(line);
    this.onLine();
  }
}
