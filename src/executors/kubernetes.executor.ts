import type { V1Job } from '@kubernetes/client-node';
import type { Logger } from '../common/logger';
import type { MachineTypes } from '../common/machine-types';
import {
  ExecutorUnavailableError,
  type Executor,
  type JobExit,
  type JobObserver,
  type JobSpec,
} from './executor.port';
import { isRetryable, KubernetesApiError, type KubernetesClient } from './kubernetes.client';
import {
  buildJobManifest,
  jobNameOf,
  LABELS,
  MANAGED_SELECTOR,
  type KubernetesJobSettings,
} from './kubernetes.manifest';
import type { KubernetesJobEnd } from './kubernetes.states';
import { KubernetesTracker, type KubernetesTrackerSettings } from './kubernetes.tracker';
import { writeSecretFiles } from './job.env';

export interface KubernetesExecutorOptions {
  client: KubernetesClient;
  job: KubernetesJobSettings;
  tracker: KubernetesTrackerSettings;
  machineTypes: MachineTypes | null;
  log: Logger;
  /** Job creations in flight at once for submitMany (KUBERNETES_CREATE_CONCURRENCY). */
  createConcurrency?: number;
}

interface Followed {
  name: string;
  observer: JobObserver;
  stoppedBy: 'canceled' | null;
  ran: boolean;
  unfollow: () => void;
}

/**
 * Runs each job as one Kubernetes Job (docs/executors-kubernetes.md) and follows all of this
 * worker's jobs from the tracker's two watches. Jobs outlive the worker: any worker adopts them
 * by their job-id label, and a Job is never created twice (found by label before creating, and
 * its name is fixed by our job id).
 */
export class KubernetesExecutor implements Executor {
  readonly name = 'kubernetes';
  readonly detached = true;
  private readonly tracker: KubernetesTracker;
  /** By our job id. */
  private readonly followed = new Map<string, Followed>();
  private starting: Promise<void> | null = null;
  private closed = false;

  constructor(private readonly opts: KubernetesExecutorOptions) {
    this.tracker = new KubernetesTracker(opts.client, opts.tracker, opts.log);
  }

  /** The watches start with the first job; a start that failed (API down) is tried again. */
  private ready(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the executor is shutting down'));
    this.starting ??= this.tracker.start().catch((err) => {
      this.starting = null;
      throw err;
    });
    return this.starting;
  }

  /** A retried submission needs nothing more: the Job is always looked for before it is created. */
  async submit(spec: JobSpec, observer: JobObserver): Promise<string> {
    const machine = this.opts.machineTypes?.get(spec.machineType)?.kubernetes;
    const manifest = buildJobManifest(spec, machine, this.opts.job);
    // On the jobs claim the pods mount: the secrets' files, at the paths the manifest names.
    writeSecretFiles(spec);
    let job: V1Job | null;
    try {
      await this.ready();
      job = await this.find(spec.jobId);
      job ??= (await this.opts.client.createJob(manifest)).job;
    } catch (err) {
      throw unavailableOr(err, `could not create the Kubernetes Job: ${(err as Error).message}`);
    }
    this.follow(spec, job, observer, null);
    return job.metadata!.name!;
  }

  /**
   * One Job per job, as submit makes it, at most `createConcurrency` submissions in flight: a
   * batch of 10,000 does not open 10,000 requests to the API server at once (docs/
   * executors-kubernetes.md, "Batches"). Every Job is looked for before it is created, so a
   * retry creates only the ones an earlier attempt did not.
   */
  async submitMany(specs: readonly JobSpec[], observers: readonly JobObserver[]): Promise<string[]> {
    if (specs.length !== observers.length) throw new Error('submitMany: one observer per spec');
    const names: string[] = new Array<string>(specs.length);
    let next = 0;
    let failed: unknown = null;
    const lane = async () => {
      while (failed === null && next < specs.length) {
        const i = next++;
        try {
          names[i] = await this.submit(specs[i], observers[i]);
        } catch (err) {
          failed ??= err;
        }
      }
    };
    const lanes = Math.min(specs.length, this.opts.createConcurrency ?? 8);
    await Promise.all(Array.from({ length: lanes }, lane));
    // The API is unavailable: the Jobs created so far are found again when the caller retries.
    if (failed !== null) throw failed as Error;
    return names;
  }

  async adopt(spec: JobSpec, externalId: string | null, observer: JobObserver): Promise<string | null> {
    await this.ready();
    // By its label, whatever name was recorded: the label is what ties a Job to our job.
    const job = await this.find(spec.jobId);
    if (!job) {
      observer.ended({
        exitCode: null,
        signal: null,
        reason: 'lost',
        detail: `the Kubernetes Job ${externalId ?? jobNameOf(spec.jobId)} is gone: deleted, removed after its TTL, or never created`,
        infrastructure: true,
      });
      return null;
    }
    this.follow(spec, job, observer, new Date());
    return job.metadata!.name!;
  }

  async cancel(externalId: string): Promise<void> {
    for (const f of this.followed.values()) if (f.name === externalId) f.stoppedBy = 'canceled';
    // Background: the pods go with the Job (batch/v1's default would leave them running).
    await this.opts.client.deleteJob(externalId).catch((err) => {
      throw unavailableOr(err, (err as Error).message);
    });
  }

  async stopOrphan(): Promise<boolean> {
    return false; // Kubernetes Jobs are adopted, never orphaned.
  }

  async close(): Promise<void> {
    this.closed = true;
    this.followed.clear();
    await this.tracker.stop();
    this.opts.client.close();
  }

  /** Our Job for this job id, as the API answers now (the watch may not have seen a new one). */
  private async find(jobId: string): Promise<V1Job | null> {
    const { items } = await this.opts.client.listJobs(`${MANAGED_SELECTOR},${LABELS.jobId}=${jobId}`);
    // A Job being deleted (canceled, or failed here) is not one to follow on.
    return items.find((j) => !j.metadata?.deletionTimestamp) ?? null;
  }

  private follow(spec: JobSpec, job: V1Job, observer: JobObserver, adoptedAt: Date | null): void {
    this.followed.get(spec.jobId)?.unfollow();
    const f: Followed = {
      name: job.metadata!.name!,
      observer,
      stoppedBy: null,
      ran: false,
      unfollow: () => undefined,
    };
    this.followed.set(spec.jobId, f);
    f.unfollow = this.tracker.follow(
      spec.jobId,
      job,
      {
        line: (line, earlier) => observer.line('stdout', line, earlier),
        state: (state) => {
          if (state.state === 'pending') observer.pending(state.detail);
          else if (state.state === 'running') {
            f.ran = true;
            observer.running(state.nodes);
          } else {
            // A job that ran and ended between two looks (or before it was taken over) has run
            // all the same: our job goes through `running` to its end.
            if (!f.ran && (state.exitCode !== null || state.nodes.length)) observer.running(state.nodes);
            if (this.followed.get(spec.jobId) === f) this.followed.delete(spec.jobId);
            void this.ended(f, spec, state);
          }
        },
      },
      adoptedAt,
    );
  }

  private async ended(f: Followed, spec: JobSpec, state: KubernetesJobEnd): Promise<void> {
    const job = this.tracker.jobOf(spec.jobId);
    const finished = job?.status?.conditions?.some(
      (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
    );
    // Failed here (an image that never came, no node for it): its pods must not wait on.
    if (job && !finished && !job.metadata?.deletionTimestamp)
      await this.opts.client
        .deleteJob(f.name)
        .catch((err) =>
          this.opts.log.warn({ err, jobId: spec.jobId }, 'could not delete a failed Kubernetes Job'),
        );
    f.observer.ended(exitOf(state, f.stoppedBy));
  }
}

/**
 * An API that did not answer, or answered 5xx or 429 through all of the client's retries, is
 * unavailable (tried again later); any other error is final, with `message`.
 */
function unavailableOr(err: unknown, message: string): Error {
  if (err instanceof KubernetesApiError && isRetryable(err)) return new ExecutorUnavailableError(err.message);
  return err instanceof KubernetesApiError ? new Error(message) : (err as Error);
}

/** The port's end of a job from the tracker's. */
function exitOf(state: KubernetesJobEnd, stoppedBy: 'canceled' | null): JobExit {
  // A canceled Job is deleted: its disappearance is the cancel, not a loss.
  if (stoppedBy && state.reason === 'lost')
    return { exitCode: null, signal: null, reason: stoppedBy, infrastructure: false };
  return {
    exitCode: state.exitCode,
    signal: null,
    reason: state.reason,
    ...(state.error ? { detail: state.error } : {}),
    infrastructure: state.infrastructure,
  };
}
