import path from 'node:path';
import type { V1Job, V1Toleration } from '@kubernetes/client-node';
import type { OwnerType } from '../auth/principal';
import type { JobSpec } from './executor.port';
import { JOB_ENV } from './local.executor';

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

/** The `kubernetes` part of a machine type in MACHINE_TYPES_FILE. */
export interface KubernetesMachineType {
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  nodeSelector?: Record<string, string>;
  tolerations?: V1Toleration[];
}

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
}

export interface KubernetesJobInput extends JobSpec {
  owner: { type: OwnerType; id: string };
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
  spec: KubernetesJobInput,
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
  const env: Record<string, string> = {
    HOME: spec.workDir,
    TMPDIR: spec.workDir,
    LANG: 'C.UTF-8',
    ...spec.env,
    OUTPUT_DIR: spec.outputDir,
    [JOB_ENV]: spec.jobId,
  };
  const indexed = spec.machineCount > 1;
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: jobNameOf(spec.jobId),
      namespace: settings.namespace,
      labels,
      annotations: { 'media-platform/machine-type': spec.machineType },
    },
    spec: {
      // Retries are ours to decide (a new job), never Kubernetes' behind our back.
      backoffLimit: 0,
      activeDeadlineSeconds: spec.timeoutSeconds,
      ttlSecondsAfterFinished: settings.ttlSecondsAfterFinished,
      ...(indexed
        ? { completionMode: 'Indexed', completions: spec.machineCount, parallelism: spec.machineCount }
        : {}),
      template: {
        metadata: { labels },
        spec: {
          restartPolicy: 'Never',
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

const QUANTITY = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[KMGTPE]i?|[munkMGTPE])?$/;
const TOLERATION_KEYS = new Set(['key', 'operator', 'value', 'effect', 'tolerationSeconds']);

/**
 * Checks a machine type's `kubernetes` part as read from MACHINE_TYPES_FILE and gives it in the
 * form the manifest uses (quantities as strings). Every problem is reported, prefixed by `where`.
 */
export function parseKubernetesMachineType(raw: unknown, where: string): KubernetesMachineType {
  const problems: string[] = [];
  const bad = (at: string, what: string) => problems.push(`${where}.${at}: ${what}`);
  const out: KubernetesMachineType = {};
  if (!isRecord(raw)) throw new Error(`${where}: expected a mapping`);
  for (const key of Object.keys(raw))
    if (!['resources', 'nodeSelector', 'tolerations'].includes(key))
      bad(key, 'unknown key (resources, nodeSelector, tolerations)');
  if (raw.resources !== undefined) {
    if (!isRecord(raw.resources)) bad('resources', 'expected a mapping');
    else {
      out.resources = {};
      for (const [kind, list] of Object.entries(raw.resources)) {
        if (kind !== 'requests' && kind !== 'limits') {
          bad(`resources.${kind}`, 'unknown key (requests, limits)');
          continue;
        }
        if (!isRecord(list)) {
          bad(`resources.${kind}`, 'expected a mapping of resource names to quantities');
          continue;
        }
        const quantities: Record<string, string> = {};
        for (const [name, value] of Object.entries(list)) {
          const text = typeof value === 'number' ? String(value) : value;
          if (typeof text !== 'string' || !QUANTITY.test(text))
            bad(`resources.${kind}.${name}`, `"${String(value)}" is not a quantity (e.g. 2, 500m, 64Gi)`);
          else quantities[name] = text;
        }
        out.resources[kind] = quantities;
      }
    }
  }
  if (raw.nodeSelector !== undefined) {
    if (!isRecord(raw.nodeSelector) || !Object.values(raw.nodeSelector).every((v) => typeof v === 'string'))
      bad('nodeSelector', 'expected a mapping of label names to string values');
    else out.nodeSelector = raw.nodeSelector as Record<string, string>;
  }
  if (raw.tolerations !== undefined) {
    if (!Array.isArray(raw.tolerations)) bad('tolerations', 'expected a list');
    else {
      out.tolerations = [];
      raw.tolerations.forEach((t: unknown, i) => {
        const at = `tolerations[${i}]`;
        if (!isRecord(t)) return bad(at, 'expected a mapping');
        const unknown = Object.keys(t).filter((k) => !TOLERATION_KEYS.has(k));
        if (unknown.length) bad(at, `unknown key(s) ${unknown.join(', ')}`);
        if (t.operator !== undefined && t.operator !== 'Exists' && t.operator !== 'Equal')
          bad(`${at}.operator`, 'expected Exists or Equal');
        if (
          t.effect !== undefined &&
          !['NoSchedule', 'PreferNoSchedule', 'NoExecute'].includes(String(t.effect))
        )
          bad(`${at}.effect`, 'expected NoSchedule, PreferNoSchedule or NoExecute');
        for (const k of ['key', 'value'] as const)
          if (t[k] !== undefined && typeof t[k] !== 'string') bad(`${at}.${k}`, 'expected a string');
        if (t.tolerationSeconds !== undefined && !Number.isSafeInteger(t.tolerationSeconds))
          bad(`${at}.tolerationSeconds`, 'expected an integer');
        out.tolerations!.push(t as V1Toleration);
      });
    }
  }
  if (problems.length) throw new Error(problems.join('; '));
  return out;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
