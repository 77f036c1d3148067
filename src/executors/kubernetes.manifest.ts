import path from 'node:path';
import type { V1Job } from '@kubernetes/client-node';
import type { KubernetesMachineType } from '../common/machine-types';
import type { JobPriority, JobSpec } from './executor.port';
import { jobEnvironment } from './job.env';

/**
 * The batch/v1 Job that runs one of our jobs on Kubernetes (docs/executors-kubernetes.md). Pure:
 * the same job always gives the same manifest, so a worker that restarts can find the Job it
 * (or another worker) created by its name and labels.
 */

/** Labels every Job and pod of ours carries; the executor finds and follows them by these. */
export const LABELS = {
  managedBy: 'app.kubernetes.io/managed-by',
  jobId: 'media-platform/job-id',
  ownerId: 'media-platform/owner-id',
  ownerType: 'media-platform/owner-type',
} as const;
export const MANAGED_BY = 'media-platform';
/** The selector of all our Jobs and pods in the namespace: one watch covers all of them. */
export const MANAGED_SELECTOR = `${LABELS.managedBy}=${MANAGED_BY}`;
/** Kubernetes sets this label on an Indexed Job's pods. */
export const COMPLETION_INDEX_LABEL = 'batch.kubernetes.io/job-completion-index';
export const CONTAINER_NAME = 'job';
/** The volume of the jobs' claim, as the pod spec names it. */
const JOBS_VOLUME = 'jobs';
/** Containers named `builtin/<name>` are the service's own programs, run from its own image. */
const BUILTIN_PREFIX = 'builtin/';

export interface KubernetesJobSettings {
  namespace: string;
  /** The ReadWriteMany claim that holds JOBS_DIR (`KUBERNETES_JOBS_PVC`). */
  jobsPvc: string;
  /** Where the worker has the claim mounted (`JOBS_DIR`); job directories are below it. */
  jobsDir: string;
  /** Seconds a finished Job (and its pods) stays before Kubernetes removes it. */
  ttlSecondsAfterFinished: number;
  imagePullSecrets: readonly string[];
  /** The job pods' service account; unset: the namespace's default, without its token. */
  serviceAccount: string | undefined;
  /** The image that holds the service's own programs (`builtin/...` containers). */
  builtinImage: string | undefined;
  /** The service's own programs by name, as the built-in image runs them. */
  programs: Record<string, string[]>;
  /** PriorityClass names by priority (KUBERNETES_PRIORITY_CLASSES); none: the cluster's default. */
  priorityClasses?: Readonly<Partial<Record<JobPriority, string>>>;
  /**
   * Kueue LocalQueues by owner (`user:<id>`, `team:<id>`, `*` for the rest; KUBERNETES_KUEUE_QUEUES).
   * A job with a queue is created suspended: Kueue admits it (unsuspends it) within its quotas.
   */
  kueueQueues?: Readonly<Record<string, string>>;
}

/** The label Kueue reads a Job's LocalQueue from. */
export const KUEUE_QUEUE_LABEL = 'kueue.x-k8s.io/queue-name';

/** The owner's LocalQueue, with `{owner_type}` and `{owner_id}` filled in; undefined: none. */
export function kueueQueueOf(
  spec: JobSpec,
  queues: Readonly<Record<string, string>> | undefined,
): string | undefined {
  const template = queues?.[`${spec.owner.type}:${spec.owner.id}`] ?? queues?.['*'];
  if (!template) return undefined;
  const name = template.replaceAll('{owner_type}', spec.owner.type).replaceAll('{owner_id}', spec.owner.id);
  if (name.length > 63)
    throw new Error(`the Kueue queue name "${name}" is longer than a label value may be (63)`);
  return name;
}

/** The Job's name: fixed by our job id, so it can never be created twice. */
export function jobNameOf(jobId: string): string {
  return `media-job-${jobId}`;
}

/**
 * Kubernetes expands `$(VAR)` in a container's command, args and env values, and reads `$$` as
 * `$`; doubling every `$` makes any value arrive exactly as it was given.
 */
export function escapeExpansion(value: string): string {
  return value.replaceAll('$', () => '$$');
}

/**
 * The Job for one job. `machine` is the machine type's `kubernetes` part (none: no resources,
 * node selector or tolerations). A `machineCount` above 1 is an Indexed Job of that many pods,
 * all running the same argv over the same job directory (`JOB_COMPLETION_INDEX` tells them
 * apart); the Job succeeds when all of them do and fails as soon as one fails.
 */
export function buildJobManifest(
  spec: JobSpec,
  machine: KubernetesMachineType | undefined,
  settings: KubernetesJobSettings,
): V1Job {
  const subPath = path.relative(settings.jobsDir, spec.workDir);
  if (!subPath || subPath.startsWith('..') || path.isAbsolute(subPath))
    throw new Error(`the job directory ${spec.workDir} is not below JOBS_DIR (${settings.jobsDir})`);
  if (!Number.isInteger(spec.machineCount) || spec.machineCount < 1)
    throw new Error(`machine count ${spec.machineCount} is not a positive integer`);
  const { image, argv } = imageAndArgv(spec, settings);
  const labels = {
    [LABELS.managedBy]: MANAGED_BY,
    [LABELS.jobId]: spec.jobId,
    [LABELS.ownerId]: spec.owner.id,
    [LABELS.ownerType]: spec.owner.type,
  };
  const queue = kueueQueueOf(spec, settings.kueueQueues);
  const priorityClass = settings.priorityClasses?.[spec.priority ?? 'normal'];
  // PATH is the image's. Secrets are files in the job's directory (never values in a manifest).
  const env = jobEnvironment(spec, undefined, 'files');
  const indexed = spec.machineCount > 1;
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: jobNameOf(spec.jobId),
      namespace: settings.namespace,
      labels: queue ? { ...labels, [KUEUE_QUEUE_LABEL]: queue } : labels,
      annotations: { 'media-platform/machine-type': spec.machineType },
    },
    spec: {
      // Retries are ours to decide (a new job), never Kubernetes' behind our back.
      backoffLimit: 0,
      activeDeadlineSeconds: spec.timeoutSeconds,
      ttlSecondsAfterFinished: settings.ttlSecondsAfterFinished,
      // Kueue admits a queued Job by unsuspending it; created running, it would bypass its quotas.
      ...(queue ? { suspend: true } : {}),
      ...(indexed
        ? { completionMode: 'Indexed', completions: spec.machineCount, parallelism: spec.machineCount }
        : {}),
      template: {
        metadata: { labels },
        spec: {
          restartPolicy: 'Never',
          ...(priorityClass ? { priorityClassName: priorityClass } : {}),
          // The pods get no API credentials unless an account is named for them.
          ...(settings.serviceAccount
            ? { serviceAccountName: settings.serviceAccount }
            : { automountServiceAccountToken: false }),
          // Otherwise every Service of the namespace becomes environment variables of the job.
          enableServiceLinks: false,
          ...(settings.imagePullSecrets.length
            ? { imagePullSecrets: settings.imagePullSecrets.map((name) => ({ name })) }
            : {}),
          ...(machine?.nodeSelector ? { nodeSelector: { ...machine.nodeSelector } } : {}),
          ...(machine?.tolerations ? { tolerations: machine.tolerations.map((t) => ({ ...t })) } : {}),
          volumes: [{ name: JOBS_VOLUME, persistentVolumeClaim: { claimName: settings.jobsPvc } }],
          containers: [
            {
              name: CONTAINER_NAME,
              image,
              command: [escapeExpansion(argv[0])],
              args: argv.slice(1).map(escapeExpansion),
              workingDir: spec.workDir,
              env: Object.entries(env).map(([name, value]) => ({ name, value: escapeExpansion(value) })),
              ...(machine?.resources ? { resources: structuredClone(machine.resources) } : {}),
              // The job's own directory only, at the path the worker sees it, so paths agree.
              volumeMounts: [{ name: JOBS_VOLUME, mountPath: spec.workDir, subPath }],
            },
          ],
        },
      },
    },
  };
}

/** A `builtin/` container runs the service's own image, with the program resolved in it. */
function imageAndArgv(spec: JobSpec, settings: KubernetesJobSettings): { image: string; argv: string[] } {
  if (!spec.argv.length) throw new Error('the job has no program to run');
  if (!spec.container.startsWith(BUILTIN_PREFIX)) return { image: spec.container, argv: spec.argv };
  if (!settings.builtinImage)
    throw new Error(
      `the container "${spec.container}" is the service's own; set KUBERNETES_BUILTIN_IMAGE to the service's image`,
    );
  const [program, ...args] = spec.argv;
  const resolved = Object.hasOwn(settings.programs, program) ? settings.programs[program] : [program];
  return { image: settings.builtinImage, argv: [...resolved, ...args] };
}
