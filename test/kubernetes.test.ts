import { BatchV1Api, KubeConfig, type V1Job } from '@kubernetes/client-node';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { KUBERNETES_CALLS, KubernetesApiError, KubernetesClient } from '../src/executors/kubernetes.client';
import { buildJobManifest, LABELS, type KubernetesJobSettings } from '../src/executors/kubernetes.manifest';
import type { KubernetesMachineType } from '../src/common/machine-types';
import type { KubernetesJobEnd, KubernetesJobState } from '../src/executors/kubernetes.states';
import { KubernetesTracker } from '../src/executors/kubernetes.tracker';
import { alive } from './helpers/jobs';
import { startWorkerPeer } from './helpers/kubernetes-deploy';
import { KubernetesPeer, type PeerJob } from './helpers/kubernetes-peer';

/**
 * The Kubernetes executor's parts (manifest, API client, watches, state mapping, log following)
 * against the Kubernetes API peer, which runs each pod's command as a local process. The peer
 * enforces the worker's Role from deploy/kubernetes/, so every call here is one it allows.
 */

const NS = 'media';
const OWNER = '3f0c9a52-8c1e-4d5b-9a7e-2b6d4c8e1f00';
const PROGRAM = path.join(__dirname, 'fixtures', 'job-program.js');
const NODE = process.execPath;

let dir: string;
let jobsDir: string;
let peer: KubernetesPeer;
let client: KubernetesClient;
let tracker: KubernetesTracker;
const logged: { msg: string; call?: string; status?: number; delayMs?: number }[] = [];
const log = pino(
  { level: 'debug' },
  {
    write: (line: string) => {
      logged.push(JSON.parse(line));
      if (process.env.DEBUG_K8S) process.stderr.write(line);
    },
  },
);

function kubeConfig(namespace = NS): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(peer.kubeconfig(namespace));
  return kc;
}

function newClient(namespace = NS): KubernetesClient {
  return new KubernetesClient({
    kubeConfig: kubeConfig(namespace),
    namespace,
    log,
    retry: { attempts: 5, baseMs: 20, maxMs: 200, maxRetryAfterMs: 5000 },
  });
}

function settings(): KubernetesJobSettings {
  return {
    namespace: NS,
    jobsPvc: 'media-platform-jobs',
    jobsDir,
    ttlSecondsAfterFinished: 3600,
    imagePullSecrets: [],
    serviceAccount: undefined,
    builtinImage: undefined,
    programs: {},
  };
}

interface Followed {
  jobId: string;
  name: string;
  workDir: string;
  states: KubernetesJobState[];
  lines: string[];
  earlier: string[];
  ended: Promise<KubernetesJobEnd>;
  /** Resolves once `check` holds, checked after every state and line. */
  until(check: () => boolean, what: string): Promise<void>;
}

function follow(on: KubernetesTracker, jobId: string, job: V1Job, adoptedAt: Date | null = null) {
  const states: KubernetesJobState[] = [];
  const lines: string[] = [];
  const earlier: string[] = [];
  const waiters = new Set<() => void>();
  let ended!: (s: KubernetesJobEnd) => void;
  const end = new Promise<KubernetesJobEnd>((r) => (ended = r));
  const changed = () => waiters.forEach((w) => w());
  on.follow(
    jobId,
    job,
    {
      state: (s) => {
        states.push(s);
        if (s.state === 'ended') ended(s);
        changed();
      },
      line: (l, before) => {
        (before ? earlier : lines).push(l);
        changed();
      },
    },
    adoptedAt,
  );
  const until = (check: () => boolean, what: string) =>
    new Promise<void>((resolve, reject) => {
      const waiter = () => {
        if (!check()) return;
        waiters.delete(waiter);
        resolve();
      };
      waiters.add(waiter);
      void end.then(() => {
        if (!waiters.delete(waiter)) return;
        if (check()) resolve();
        else reject(new Error(`the job ended before ${what}`));
      });
      waiter();
    });
  return { states, lines, earlier, ended: end, until };
}

interface RunOptions {
  machine?: KubernetesMachineType;
  machineCount?: number;
  timeoutSeconds?: number;
  image?: string;
}

/** A job's directory under JOBS_DIR and its Job, as the executor will make them. */
function jobFor(argv: string[], opts: RunOptions = {}) {
  const jobId = randomUUID();
  const workDir = path.join(jobsDir, jobId);
  mkdirSync(path.join(workDir, 'output'), { recursive: true });
  const manifest = buildJobManifest(
    {
      jobId,
      argv,
      env: {},
      container: opts.image ?? 'registry.example/tools:1',
      machineType: 'test',
      machineCount: opts.machineCount ?? 1,
      timeoutSeconds: opts.timeoutSeconds ?? 600,
      inputs: [],
      workDir,
      outputDir: path.join(workDir, 'output'),
      owner: { type: 'user', id: OWNER },
    },
    opts.machine,
    settings(),
  );
  return { jobId, workDir, name: manifest.metadata!.name!, manifest };
}

/** Creates a job's Job and follows it with the suite's tracker. */
async function run(argv: string[], opts: RunOptions = {}): Promise<Followed> {
  const { manifest, ...job } = jobFor(argv, opts);
  const { job: created } = await client.createJob(manifest);
  return { ...job, ...follow(tracker, job.jobId, created) };
}

function peerJob(name: string): PeerJob {
  const job = peer.jobs(NS).find((j) => j.metadata.name === name);
  if (!job) throw new Error(`no Job ${name}`);
  return job;
}

function podOf(name: string) {
  return peer.podsOf(peerJob(name))[0];
}

function callsOf(verb: string) {
  return peer.calls.filter((c) => c.verb === verb).length;
}

beforeAll(async () => {
  ({ dir, jobsDir, peer } = await startWorkerPeer(NS, 'media-k8s-'));
  client = newClient();
  tracker = new KubernetesTracker(client, { imagePullGraceSeconds: 1, unschedulableSeconds: 1 }, log);
  await tracker.start();
});

afterAll(async () => {
  await tracker?.stop();
  client?.close();
  await peer?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('running Jobs', () => {
  it('runs a Job to its end: states, the node, real log lines, outputs in the job directory', async () => {
    const job = await run([NODE, PROGRAM, 'outputs']);
    const end = await job.ended;
    expect(end).toEqual({
      state: 'ended',
      exitCode: 0,
      reason: null,
      error: null,
      infrastructure: false,
      nodes: ['peer-node-1'],
    });
    expect(job.states[0]).toMatchObject({ state: 'pending' });
    expect(job.states).toContainEqual({ state: 'running', nodes: ['peer-node-1'] });
    // The job's own environment, nothing of the worker's.
    expect(JSON.parse(job.lines.at(-1)!)).toEqual({
      wrote: 2,
      env: [
        'HOME',
        'HOSTNAME',
        'KUBERNETES_SERVICE_HOST',
        'KUBERNETES_SERVICE_PORT',
        'LANG',
        'MEDIA_JOB_ID',
        'OUTPUT_DIR',
        'PATH',
        'TMPDIR',
      ],
    });
    expect(readFileSync(path.join(job.workDir, 'output', 'a-first.txt'), 'utf8')).toBe('first output\n');
    const pod = podOf(job.name);
    expect(pod.spec.containers[0].volumeMounts).toEqual([
      { name: 'jobs', mountPath: job.workDir, subPath: job.jobId },
    ]);
  });

  it('passes hostile values through Kubernetes $(VAR) expansion literally', async () => {
    const hostile = [
      '$(OUTPUT_DIR)',
      '$$(HOME)',
      '$(HOSTNAME)',
      '; rm -rf /',
      '`id`',
      'a\nb',
      '-x',
      '$',
      '$$',
      'cost: $5',
      '$(',
    ];
    const job = await run([NODE, PROGRAM, 'argv', ...hostile]);
    expect(await job.ended).toMatchObject({ exitCode: 0 });
    expect(JSON.parse(job.lines.at(-1)!)).toEqual(hostile);

    // The peer does expand: the same values unescaped arrive changed.
    const { jobId, workDir, manifest } = jobFor([NODE, PROGRAM, 'argv']);
    manifest.spec!.template.spec!.containers[0].args!.push('$(OUTPUT_DIR)', '$$(HOME)');
    const raw = follow(tracker, jobId, (await client.createJob(manifest)).job);
    expect(await raw.ended).toMatchObject({ exitCode: 0 });
    expect(JSON.parse(raw.lines.at(-1)!)).toEqual([path.join(workDir, 'output'), '$(HOME)']);
  });

  it('reports a failing exit code, with what the program printed to stderr', async () => {
    const job = await run([NODE, PROGRAM, 'fail', '3']);
    expect(await job.ended).toMatchObject({ exitCode: 3, reason: null, error: null, infrastructure: false });
    expect(job.lines).toContain('something went wrong');
  });

  it('names a program that cannot start', async () => {
    const job = await run(['/nonexistent/program', 'x']);
    const end = await job.ended;
    expect(end).toMatchObject({ exitCode: 128, infrastructure: false });
    expect(end.error).toMatch(/^StartError: the container could not start: .*\/nonexistent\/program/);
  });

  it('stops a Job at its deadline: DeadlineExceeded, its process gone', async () => {
    const job = await run([NODE, PROGRAM, 'idle'], { timeoutSeconds: 1 });
    await job.until(() => job.lines.some((l) => l.startsWith('idle ')), 'the program ran');
    const pid = Number(job.lines.find((l) => l.startsWith('idle '))!.split(' ')[1]);
    const end = await job.ended;
    expect(end).toMatchObject({
      reason: 'timeout',
      error: 'DeadlineExceeded: Job was active longer than specified deadline',
    });
    await peer.waitFor(() => peer.podsOf(peerJob(job.name)).length === 0, 'the pod deleted');
    expect(alive(pid)).toBe(false);
  });

  it('fails a pod that cannot pull its image after the grace period, naming the image', async () => {
    peer.makeUnpullable('registry.example/missing:1');
    const job = await run([NODE, PROGRAM, 'argv'], { image: 'registry.example/missing:1' });
    const end = await job.ended;
    expect(end.error).toMatch(
      /^(ErrImagePull|ImagePullBackOff): cannot pull the image "registry\.example\/missing:1": .* \(for 1 s\)$/,
    );
    expect(end).toMatchObject({ exitCode: null, infrastructure: false });
    expect(job.states).toContainEqual(
      expect.objectContaining({ state: 'pending', problem: expect.objectContaining({ kind: 'image' }) }),
    );
  });

  it('names an OOM kill with the container memory limit', async () => {
    const job = await run([NODE, PROGRAM, 'idle'], {
      machine: { resources: { limits: { memory: '256Mi' } } },
    });
    await job.until(() => job.lines.some((l) => l.startsWith('idle ')), 'the program ran');
    peer.oomKill(podOf(job.name));
    expect(await job.ended).toMatchObject({
      exitCode: 137,
      error: 'OOMKilled: the program used more memory than the container may (256Mi)',
      infrastructure: false,
    });
  });

  it('marks an evicted pod as a failure of the infrastructure', async () => {
    const job = await run([NODE, PROGRAM, 'idle']);
    await job.until(() => job.lines.some((l) => l.startsWith('idle ')), 'the program ran');
    peer.evict(podOf(job.name), 'The node was low on resource: memory.');
    expect(await job.ended).toMatchObject({
      error: 'Evicted: The node was low on resource: memory.',
      infrastructure: true,
    });
  });

  it('fails a pod that no node can take after the unschedulable time, with the scheduler message', async () => {
    const job = await run([NODE, PROGRAM, 'argv'], { machine: { nodeSelector: { pool: 'h100' } } });
    const end = await job.ended;
    expect(end.error).toMatch(
      /^Unschedulable: 0\/\d nodes are available: \d node\(s\) didn't match Pod's node affinity\/selector\. \(for 1 s\)$/,
    );
    expect(end.nodes).toEqual([]);
  });

  it('runs a GPU machine type on a node that has the GPU, the label and the taint it tolerates', async () => {
    peer.addNode({
      name: 'gpu-node-1',
      labels: { 'nvidia.com/gpu.product': 'NVIDIA-A100' },
      capacity: { cpu: '32', memory: '256Gi', 'nvidia.com/gpu': '1' },
      taints: [{ key: 'nvidia.com/gpu', effect: 'NoSchedule' }],
    });
    const a100: KubernetesMachineType = {
      resources: { requests: { cpu: '8', memory: '64Gi' }, limits: { 'nvidia.com/gpu': '1' } },
      nodeSelector: { 'nvidia.com/gpu.product': 'NVIDIA-A100' },
      tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
    };
    const job = await run([NODE, PROGRAM, 'argv', 'gpu'], { machine: a100 });
    expect(await job.ended).toMatchObject({ exitCode: 0, nodes: ['gpu-node-1'] });
  });

  it('runs machine_count 2 as an Indexed Job of two pods, marking the second pod’s lines', async () => {
    const job = await run([NODE, PROGRAM, 'argv', 'x'], { machineCount: 2 });
    expect(await job.ended).toMatchObject({ exitCode: 0 });
    expect(job.lines.sort()).toEqual(['["x"]', '[1] ["x"]']);
    expect(peer.podsOf(peerJob(job.name))).toHaveLength(2);
  });
});

describe('following through breaks', () => {
  /** A job that ends while no watch is open (dropped, and held until `beforeRelease` ran). */
  async function endUnwatched(beforeRelease: () => void) {
    const flag = path.join(dir, `flag-${randomUUID()}`);
    const job = await run([NODE, PROGRAM, 'await', flag]);
    await job.until(() => job.lines.includes('waiting'), 'the program ran');
    const lists = callsOf('list');
    await peer.waitFor(() => peer.openWatches() === 2, 'both watches open');
    peer.holdWatches();
    peer.dropWatches();
    writeFileSync(flag, '');
    await peer.waitFor(
      () => peerJob(job.name).status.conditions?.some((c) => c.type === 'Complete'),
      'the Job complete',
    );
    beforeRelease();
    peer.releaseWatches();
    expect(await job.ended).toMatchObject({ exitCode: 0, error: null });
    expect(job.lines).toEqual(['waiting', 'saw it']);
    return { lists: callsOf('list') - lists };
  }

  it('resumes a dropped watch from its resourceVersion without losing the end', async () => {
    expect(await endUnwatched(() => undefined)).toEqual({ lists: 0 });
    const resumed = peer.calls.filter((c) => c.verb === 'watch').slice(-2);
    expect(resumed.every((c) => Number(c.query.resourceVersion) > 0)).toBe(true);
  });

  it('lists again after 410 Gone and still sees the end', async () => {
    expect(await endUnwatched(() => peer.compact())).toEqual({ lists: 2 });
  });

  it('notices, by listing again, a Job deleted while no watch was open', async () => {
    const job = await run([NODE, PROGRAM, 'idle']);
    await job.until(() => job.lines.some((l) => l.startsWith('idle ')), 'the program ran');
    await peer.waitFor(() => peer.openWatches() === 2, 'both watches open');
    peer.holdWatches();
    peer.dropWatches();
    await newClient().deleteJob(job.name);
    await peer.waitFor(() => !peer.jobs(NS).some((j) => j.metadata.name === job.name), 'the Job gone');
    peer.compact();
    peer.releaseWatches();
    expect(await job.ended).toMatchObject({
      reason: 'lost',
      error: 'the Kubernetes Job was deleted before it finished',
      infrastructure: true,
    });
  });

  it('continues watches that the server ends', async () => {
    const flag = path.join(dir, `flag-${randomUUID()}`);
    const job = await run([NODE, PROGRAM, 'await', flag]);
    await job.until(() => job.lines.includes('waiting'), 'the program ran');
    const [watches, lists] = [callsOf('watch'), callsOf('list')];
    await peer.waitFor(() => peer.openWatches() === 2, 'both watches open');
    peer.endWatches();
    await peer.waitFor(() => callsOf('watch') >= watches + 2, 'both watches resumed');
    writeFileSync(flag, '');
    expect(await job.ended).toMatchObject({ exitCode: 0 });
    expect(callsOf('list')).toBe(lists);
  });

  it('resumes from the version of a bookmark, past changes it was not shown', async () => {
    await peer.waitFor(() => peer.openWatches() === 2, 'both watches open');
    // A Job that is not ours: its changes move the version but reach no watch of ours.
    const other = jobFor([NODE, PROGRAM, 'argv']).manifest;
    other.metadata!.labels = other.spec!.template.metadata!.labels = { app: 'someone-else' };
    await kubeConfig().makeApiClient(BatchV1Api).createNamespacedJob({ namespace: NS, body: other });
    await peer.waitFor(() => peerJob(other.metadata!.name!).status.succeeded === 1, 'the other Job done');
    const version = peer.resourceVersion();
    peer.bookmark();
    const watches = callsOf('watch');
    // Bookmarks are not acknowledged: end the watches until both resume from that version.
    await peer.waitFor(() => {
      if (peer.calls.filter((c) => c.verb === 'watch').slice(watches).length >= 2) return true;
      if (peer.openWatches() === 2) peer.endWatches();
      return false;
    }, 'both watches resumed');
    const resumed = peer.calls.filter((c) => c.verb === 'watch').slice(watches, watches + 2);
    expect(resumed.map((c) => c.query.resourceVersion)).toEqual([version, version]);
  });

  it('follows a log across broken streams without losing or repeating a line', async () => {
    const job = await run([NODE, PROGRAM, 'lines', '40', '25']);
    await job.until(() => job.lines.length >= 5, 'five lines');
    peer.dropLogs();
    await job.until(() => job.lines.length >= 20, 'twenty lines');
    peer.dropLogs();
    expect(await job.ended).toMatchObject({ exitCode: 0 });
    expect(job.lines).toEqual(Array.from({ length: 40 }, (_, i) => `line ${i + 1}`));
    expect(
      peer.calls.filter((c) => c.resource === 'pods/log' && c.query.sinceTime).length,
    ).toBeGreaterThanOrEqual(2);
  });
});

describe('API errors', () => {
  it('retries a 500 and a 429, waiting as long as Retry-After says', async () => {
    const before = peer.calls.length;
    peer.failNext({ verb: 'create', resource: 'jobs' }, 500);
    peer.failNext({ verb: 'list', resource: 'pods' }, 429, { retryAfter: 1 });
    const job = await run([NODE, PROGRAM, 'argv', 'retried']);
    await client.listPods(`${LABELS.jobId}=${job.jobId}`);
    expect(await job.ended).toMatchObject({ exitCode: 0 });
    const calls = peer.calls.slice(before).map((c) => `${c.verb} ${c.resource} ${c.status}`);
    expect(calls.filter((c) => c.startsWith('create '))).toEqual(['create jobs 500', 'create jobs 201']);
    expect(calls.filter((c) => c.startsWith('list pods'))).toEqual(['list pods 429', 'list pods 200']);
    expect(logged).toContainEqual(
      expect.objectContaining({
        msg: 'Kubernetes API call failed; retrying',
        call: 'listPods',
        status: 429,
        delayMs: 1000,
      }),
    );
  });

  it('never creates a Job twice when the reply to its creation was lost', async () => {
    peer.failNext({ verb: 'create', resource: 'jobs' }, 500, { afterApplying: true });
    const before = peer.jobs(NS).length;
    const job = await run([NODE, PROGRAM, 'argv', 'once']);
    expect(await job.ended).toMatchObject({ exitCode: 0 });
    expect(peer.jobs(NS).length).toBe(before + 1);
    const creates = peer.calls
      .filter((c) => c.verb === 'create')
      .slice(-2)
      .map((c) => c.status);
    expect(creates).toEqual([500, 409]);
  });

  it('gives up at once on a refusal, in words', async () => {
    const other = newClient('other');
    await expect(other.listJobs(LABELS.managedBy)).rejects.toThrow(
      new KubernetesApiError(
        'listJobs',
        403,
        '403 Forbidden: jobs.batch is forbidden: User "system:serviceaccount:media:media-platform-worker" cannot list resource "jobs" in API group "batch" in the namespace "other"',
      ),
    );
    other.close();
  });
});

describe('cancel and take-over', () => {
  it('deletes a Job with its pods (Background); batch/v1’s default would leave the pod running', async () => {
    const job = await run([NODE, PROGRAM, 'idle']);
    await job.until(() => job.lines.some((l) => l.startsWith('idle ')), 'the program ran');
    const pid = Number(job.lines.find((l) => l.startsWith('idle '))!.split(' ')[1]);
    const uid = peerJob(job.name).metadata.uid;
    expect(await client.deleteJob(job.name)).toBe(true);
    expect(await job.ended).toMatchObject({ reason: 'lost' });
    await peer.waitFor(
      () => !peer.pods(NS).some((p) => p.metadata.labels?.['batch.kubernetes.io/controller-uid'] === uid),
      'the pod deleted',
    );
    expect(alive(pid)).toBe(false);
    expect(await client.deleteJob(job.name)).toBe(false);

    const orphaned = await run([NODE, PROGRAM, 'idle']);
    await orphaned.until(() => orphaned.lines.some((l) => l.startsWith('idle ')), 'the program ran');
    const pod = podOf(orphaned.name);
    await kubeConfig().makeApiClient(BatchV1Api).deleteNamespacedJob({ namespace: NS, name: orphaned.name });
    await orphaned.ended;
    expect(peer.processOf(pod)).not.toBeNull();
  });

  it('takes over a running Job after a worker restart: found by its label, followed to its end', async () => {
    const flag = path.join(dir, `flag-${randomUUID()}`);
    const first = newClient();
    const before = new KubernetesTracker(first, { imagePullGraceSeconds: 1, unschedulableSeconds: 1 }, log);
    await before.start();
    const { jobId, workDir, manifest } = jobFor([NODE, PROGRAM, 'await', flag]);
    const job = follow(before, jobId, (await first.createJob(manifest)).job);
    await job.until(() => job.lines.includes('waiting'), 'the program ran');
    // The worker stops; its Job runs on.
    await before.stop();
    first.close();

    const after = newClient();
    const restarted = new KubernetesTracker(
      after,
      { imagePullGraceSeconds: 1, unschedulableSeconds: 1 },
      log,
    );
    await restarted.start();
    const found = await after.listJobs(`${LABELS.jobId}=${jobId}`);
    expect(found.items.map((j) => j.metadata!.name)).toEqual([manifest.metadata!.name]);
    expect(restarted.jobOf(jobId)?.metadata?.uid).toBe(found.items[0].metadata!.uid);
    const again = follow(restarted, jobId, found.items[0], new Date());
    await again.until(() => again.earlier.includes('waiting'), 'the earlier line');
    writeFileSync(flag, '');
    expect(await again.ended).toMatchObject({ exitCode: 0, error: null });
    // What the first worker showed comes again, marked; what came after, as new lines.
    expect(again.earlier).toEqual(['waiting']);
    expect(again.lines).toEqual(['saw it']);
    expect(existsSync(workDir)).toBe(true);
    await restarted.stop();
    after.close();
  });
});

describe('the Role', () => {
  it('allowed every call made here, and every call is one the client declares', () => {
    const declared = new Set(
      Object.values(KUBERNETES_CALLS).map((c) => `${c.group}/${c.resource}/${c.verb}`),
    );
    const made = new Set(peer.calls.map((c) => `${c.group}/${c.resource}/${c.verb}`));
    expect([...made].filter((c) => !declared.has(c))).toEqual([]);
    // Every declared call was made at least once by these tests.
    expect([...declared].filter((c) => !made.has(c))).toEqual([]);
    expect(peer.calls.filter((c) => c.status === 403 && c.namespace === NS)).toEqual([]);
  });
});

describe('priorities and Kueue queues (docs/governance.md)', () => {
  it('gives a Job the priority’s PriorityClass and, with Kueue, the owner’s LocalQueue, suspended', async () => {
    const jobId = randomUUID();
    const workDir = path.join(jobsDir, jobId);
    mkdirSync(path.join(workDir, 'output'), { recursive: true });
    const team = randomUUID();
    const spec = {
      jobId,
      argv: ['true'],
      env: {},
      container: 'registry.example/tools:1',
      machineType: 'test',
      machineCount: 1,
      timeoutSeconds: 600,
      inputs: [],
      workDir,
      outputDir: path.join(workDir, 'output'),
      owner: { type: 'team' as const, id: team },
      priority: 'low' as const,
    };
    const governed = {
      ...settings(),
      priorityClasses: { low: 'batch-low', high: 'interactive' },
      kueueQueues: { [`team:${team}`]: 'lab-queue', '*': 'jobs-{owner_type}-{owner_id}' },
    };
    const { job: created } = await client.createJob(buildJobManifest(spec, undefined, governed));
    const stored = peerJob(created.metadata!.name!);
    expect(stored.metadata.labels).toMatchObject({ 'kueue.x-k8s.io/queue-name': 'lab-queue' });
    expect(stored.spec).toMatchObject({ suspend: true });
    expect(stored.spec.template.spec).toMatchObject({ priorityClassName: 'batch-low' });
    await client.deleteJob(created.metadata!.name!);

    // Another owner takes the `*` queue; normal priority has no class here: none is set.
    const other = buildJobManifest(
      { ...spec, jobId: randomUUID(), owner: { type: 'user', id: OWNER }, priority: 'normal' },
      undefined,
      governed,
    );
    expect(other.metadata!.labels!['kueue.x-k8s.io/queue-name']).toBe(`jobs-user-${OWNER}`);
    expect(other.spec!.template.spec!.priorityClassName).toBeUndefined();
    // Without Kueue configured, a Job is neither labelled nor suspended.
    const plain = buildJobManifest({ ...spec, jobId: randomUUID(), priority: 'high' }, undefined, {
      ...settings(),
      priorityClasses: { high: 'interactive' },
    });
    expect(plain.spec!.suspend).toBeUndefined();
    expect(plain.metadata!.labels!['kueue.x-k8s.io/queue-name']).toBeUndefined();
    expect(plain.spec!.template.spec!.priorityClassName).toBe('interactive');
  });
});
