import type { V1Job, V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../common/logger';
import type { KubernetesClient } from './kubernetes.client';
import { PodLogFollower } from './kubernetes.logs';
import { LABELS, MANAGED_SELECTOR } from './kubernetes.manifest';
import { indexOf, jobState, type KubernetesJobEnd, type KubernetesJobState } from './kubernetes.states';
import { ResourceWatch } from './kubernetes.watch';

export interface KubernetesTrackerSettings {
  /** A pod that cannot pull its image (or create its container) this long fails. */
  imagePullGraceSeconds: number;
  /** A pod that no node can take this long fails, with the scheduler's message. */
  unschedulableSeconds: number;
  /** The server ends each watch after this long (it is then resumed); default 300. */
  watchTimeoutSeconds?: number;
  /** How long the log of an ended job may still be read before it is cut; default 30. */
  logDrainSeconds?: number;
}

export interface FollowHandlers {
  /** Each change of state; `ended` comes once, last, after every log line was delivered. */
  state(state: KubernetesJobState): void;
  /** `earlier`: printed before the job was taken over (shown by the worker that had it). */
  line(line: string, earlier: boolean): void;
}

interface Followed {
  jobId: string;
  handlers: FollowHandlers;
  job: V1Job | undefined;
  /** The last state given to the handlers, to give only changes. */
  last: string;
  problem: { kind: string; since: number } | null;
  timer: NodeJS.Timeout | null;
  logs: Map<string, PodLogFollower>;
  adoptedAt: Date | null;
  ending: boolean;
}

/**
 * Follows all of a worker's Kubernetes jobs with two watches (its Jobs and its pods, by our
 * label), never a request per job per poll. For each followed job it works out the state from
 * the latest Job and pods (kubernetes.states.ts), fails waits that last too long (image pull,
 * unschedulable), and follows each pod's log once its container has started. It reports; the
 * executor decides what to do (delete a Job that failed here, record states).
 */
export class KubernetesTracker {
  private readonly jobs: ResourceWatch<V1Job>;
  private readonly pods: ResourceWatch<V1Pod>;
  private readonly followed = new Map<string, Followed>();
  /** Jobs by our job id; pods by our job id, then by name. */
  private readonly jobsById = new Map<string, V1Job>();
  private readonly podsByJob = new Map<string, Map<string, V1Pod>>();

  constructor(
    private readonly client: KubernetesClient,
    private readonly settings: KubernetesTrackerSettings,
    private readonly log: Logger,
  ) {
    const opts = { timeoutSeconds: settings.watchTimeoutSeconds ?? 300, log };
    this.jobs = new ResourceWatch<V1Job>(
      client,
      'jobs',
      MANAGED_SELECTOR,
      {
        changed: (job) => this.jobChanged(job, job),
        removed: (job) => this.jobChanged(job, undefined),
      },
      opts,
    );
    this.pods = new ResourceWatch<V1Pod>(
      client,
      'pods',
      MANAGED_SELECTOR,
      {
        changed: (pod) => this.podChanged(pod, true),
        removed: (pod) => this.podChanged(pod, false),
      },
      opts,
    );
  }

  /** Lists and starts watching; fails when the API cannot be read (credentials, RBAC). */
  async start(): Promise<void> {
    await Promise.all([this.jobs.start(), this.pods.start()]);
  }

  async stop(): Promise<void> {
    for (const jobId of [...this.followed.keys()]) this.unfollow(jobId);
    await Promise.all([this.jobs.stop(), this.pods.stop()]);
  }

  /** Our Job for this job id, as the watch knows it now. */
  jobOf(jobId: string): V1Job | undefined {
    return this.jobsById.get(jobId);
  }

  /**
   * Follows a job until it ends. `job` is the Job as the caller last read it (the watch may
   * not have seen a Job that was just created). Its whole log is delivered; a job taken over
   * (`adoptedAt`) has the lines printed before marked `earlier`. Answers a function that stops.
   */
  follow(jobId: string, job: V1Job, handlers: FollowHandlers, adoptedAt: Date | null = null): () => void {
    if (this.followed.has(jobId)) throw new Error(`job ${jobId} is already followed`);
    const known = this.jobOf(jobId);
    const f: Followed = {
      jobId,
      handlers,
      job: known && known.metadata?.uid === job.metadata?.uid ? known : job,
      last: '',
      problem: null,
      timer: null,
      logs: new Map(),
      adoptedAt,
      ending: false,
    };
    this.followed.set(jobId, f);
    this.evaluate(f);
    return () => this.unfollow(jobId);
  }

  private unfollow(jobId: string): void {
    const f = this.followed.get(jobId);
    if (!f) return;
    this.followed.delete(jobId);
    if (f.timer) clearTimeout(f.timer);
    for (const follower of f.logs.values()) follower.stop();
  }

  private jobChanged(object: V1Job, now: V1Job | undefined): void {
    const jobId = object.metadata?.labels?.[LABELS.jobId];
    if (!jobId) return;
    if (now) this.jobsById.set(jobId, now);
    else if (this.jobsById.get(jobId)?.metadata?.uid === object.metadata?.uid) this.jobsById.delete(jobId);
    const f = this.followed.get(jobId);
    // A removed Job of another uid (an older one of that name) says nothing about ours.
    if (!f || (!now && f.job && f.job.metadata?.uid !== object.metadata?.uid)) return;
    f.job = now;
    this.evaluate(f);
  }

  private podChanged(pod: V1Pod, present: boolean): void {
    const jobId = pod.metadata?.labels?.[LABELS.jobId];
    if (!jobId) return;
    let pods = this.podsByJob.get(jobId);
    if (present) {
      if (!pods) this.podsByJob.set(jobId, (pods = new Map()));
      pods.set(pod.metadata!.name!, pod);
    } else if (pods) {
      pods.delete(pod.metadata!.name!);
      if (!pods.size) this.podsByJob.delete(jobId);
    }
    const f = this.followed.get(jobId);
    if (f) this.evaluate(f);
  }

  private evaluate(f: Followed): void {
    if (f.ending) return;
    // Only the pods of this Job (an earlier Job of the same name may have left some).
    const uid = f.job?.metadata?.uid;
    const pods = [...(this.podsByJob.get(f.jobId)?.values() ?? [])].filter((p) => {
      const labels = p.metadata?.labels ?? {};
      return !uid || (labels['batch.kubernetes.io/controller-uid'] ?? labels['controller-uid']) === uid;
    });
    this.followLogs(f, pods);
    let state = jobState(f.job, pods);
    if (state.state === 'pending' && state.problem) {
      const { kind, message } = state.problem;
      if (f.problem?.kind !== kind) f.problem = { kind, since: Date.now() };
      const grace =
        (kind === 'unschedulable'
          ? this.settings.unschedulableSeconds
          : this.settings.imagePullGraceSeconds) * 1000;
      const left = f.problem.since + grace - Date.now();
      if (left <= 0)
        state = {
          state: 'ended',
          exitCode: null,
          reason: null,
          error: `${message} (for ${Math.round(grace / 1000)} s)`,
          infrastructure: false,
          nodes: state.nodes,
        };
      else if (!f.timer) {
        f.timer = setTimeout(() => {
          f.timer = null;
          if (this.followed.get(f.jobId) === f) this.evaluate(f);
        }, left);
        f.timer.unref();
      }
    } else f.problem = null;
    if (state.state === 'ended') return this.end(f, state);
    const text = JSON.stringify(state);
    if (text === f.last) return;
    f.last = text;
    f.handlers.state(state);
  }

  /** Once a pod's container has started, its log is followed (Indexed pods above 0 are marked). */
  private followLogs(f: Followed, pods: V1Pod[]): void {
    for (const pod of pods) {
      const name = pod.metadata!.name!;
      const state = pod.status?.containerStatuses?.[0]?.state;
      if (f.logs.has(name) || !(state?.running || state?.terminated?.startedAt)) continue;
      const index = indexOf(pod);
      const prefix = index > 0 ? `[${index}] ` : '';
      const deliver = (line: string, earlier: boolean) => f.handlers.line(prefix + line, earlier);
      f.logs.set(name, new PodLogFollower(this.client, name, deliver, this.log, f.adoptedAt));
    }
  }

  /**
   * The job ended: its logs are read to their end (for a while at most), then it is reported.
   * A Job that is gone may have left pods running (orphaned): their logs are not waited for.
   */
  private end(f: Followed, state: KubernetesJobEnd): void {
    f.ending = true;
    if (f.timer) clearTimeout(f.timer);
    if (state.reason === 'lost') for (const follower of f.logs.values()) follower.stop();
    const drained = Promise.all([...f.logs.values()].map((l) => l.done));
    const cut = setTimeout(
      () => {
        this.log.warn({ jobId: f.jobId }, 'the log of an ended Kubernetes job did not end; it is cut');
        for (const follower of f.logs.values()) follower.stop();
      },
      (this.settings.logDrainSeconds ?? 30) * 1000,
    );
    cut.unref();
    void drained.then(() => {
      clearTimeout(cut);
      if (this.followed.get(f.jobId) !== f) return;
      this.followed.delete(f.jobId);
      f.handlers.state(state);
    });
  }
}
