import type { V1Job, V1Pod } from '@kubernetes/client-node';
import { COMPLETION_INDEX_LABEL } from './kubernetes.manifest';

/**
 * What a Job and its pods mean for our job (docs/executors-kubernetes.md). Pure: the tracker
 * feeds it the latest objects from its watches; the same objects always mean the same state.
 *
 * The Job's own conditions decide the end (Complete, or Failed with BackoffLimitExceeded or
 * DeadlineExceeded), since Kubernetes sets them only once its pods have stopped; the pods give
 * the details: the node, the exit code, OOMKilled, Evicted, why a pod waits.
 */
export type KubernetesJobState =
  | {
      state: 'pending';
      /** Why it waits, in words (the scheduler's message, the container's waiting reason). */
      detail: string;
      /** A wait that becomes a failure if it lasts (the tracker's grace periods). */
      problem: { kind: 'image' | 'config' | 'unschedulable'; message: string } | null;
      nodes: string[];
    }
  | { state: 'running'; nodes: string[] }
  | {
      state: 'ended';
      /** The program's exit code (of the first pod that failed); 0 when it succeeded. */
      exitCode: number | null;
      /** `timeout`: the Job's deadline passed; `lost`: the Job is gone from the cluster. */
      reason: 'timeout' | 'lost' | null;
      /** Why it failed in words, when Kubernetes says more than an exit code. */
      error: string | null;
      /** Failed because of the cluster (eviction, preemption, a lost Job), not the program. */
      infrastructure: boolean;
      nodes: string[];
    };

export type KubernetesJobEnd = Extract<KubernetesJobState, { state: 'ended' }>;
type ContainerStatus = NonNullable<NonNullable<V1Pod['status']>['containerStatuses']>[number];

const IMAGE_WAITS = new Set(['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull']);
const CONFIG_WAITS = new Set(['CreateContainerConfigError', 'CreateContainerError', 'RunContainerError']);
const START_FAILURES = new Set(['StartError', 'ContainerCannotRun']);

/** `job` undefined: the Job is gone from the cluster (deleted, or removed after its TTL). */
export function jobState(job: V1Job | undefined, pods: readonly V1Pod[]): KubernetesJobState {
  const ordered = [...pods].sort((a, b) => indexOf(a) - indexOf(b));
  const nodes = [...new Set(ordered.map((p) => p.spec?.nodeName).filter((n): n is string => !!n))];
  if (!job)
    return {
      state: 'ended',
      exitCode: null,
      reason: 'lost',
      error: 'the Kubernetes Job was deleted before it finished',
      infrastructure: true,
      nodes,
    };
  const condition = (type: string) =>
    job.status?.conditions?.find((c) => c.type === type && c.status === 'True');
  const live = ordered.filter((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed');
  const running = ordered.some((p) => container(p)?.state?.running);
  // Kubernetes ends a Job once its pods have stopped; a pod that still looks alive here is one
  // whose last change the pod watch has not brought yet (the two watches are not in step).
  const settled = !live.length;
  if (condition('Complete') && settled)
    return { state: 'ended', exitCode: 0, reason: null, error: null, infrastructure: false, nodes };
  const failed = condition('Failed');
  if (failed && (settled || failed.reason === 'DeadlineExceeded'))
    return { state: 'ended', ...failure(failed, ordered), nodes };

  // Every pod has stopped and the Job controller is about to say how it ended.
  if (running || (ordered.length && !live.length)) return { state: 'running', nodes };
  for (const pod of live) {
    const waiting = container(pod)?.state?.waiting;
    const image = pod.spec?.containers?.[0]?.image;
    if (waiting?.reason && IMAGE_WAITS.has(waiting.reason)) {
      const message = `${waiting.reason}: cannot pull the image "${image}"${waiting.message ? `: ${waiting.message}` : ''}`;
      return { state: 'pending', detail: message, problem: { kind: 'image', message }, nodes };
    }
    if (waiting?.reason && CONFIG_WAITS.has(waiting.reason)) {
      const message = `${waiting.reason}: ${waiting.message ?? 'the container cannot be created'}`;
      return { state: 'pending', detail: message, problem: { kind: 'config', message }, nodes };
    }
    const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
    if (scheduled?.status === 'False' && scheduled.reason === 'Unschedulable') {
      const message = `Unschedulable: ${scheduled.message ?? 'no node can run the pod'}`;
      return { state: 'pending', detail: message, problem: { kind: 'unschedulable', message }, nodes };
    }
  }
  const waiting = live.map((p) => container(p)?.state?.waiting?.reason).find(Boolean);
  const detail = !ordered.length
    ? 'waiting for the Job controller to create its pod'
    : waiting
      ? `${waiting}${nodes.length ? ` on ${nodes.join(', ')}` : ''}`
      : nodes.length
        ? `scheduled on ${nodes.join(', ')}`
        : 'waiting for a node';
  return { state: 'pending', detail, problem: null, nodes };
}

/** The words for a Job that failed, from its condition and the first of its pods that failed. */
function failure(
  condition: { reason?: string; message?: string },
  pods: V1Pod[],
): Omit<KubernetesJobEnd, 'state' | 'nodes'> {
  if (condition.reason === 'DeadlineExceeded')
    return {
      exitCode: null,
      reason: 'timeout',
      error: `DeadlineExceeded: ${condition.message ?? 'the Job ran longer than its deadline'}`,
      infrastructure: false,
    };
  const pod =
    pods.find((p) => p.status?.phase === 'Failed' && !p.metadata?.deletionTimestamp) ??
    pods.find((p) => p.status?.phase === 'Failed');
  const terminated = pod && container(pod)?.state?.terminated;
  const exitCode = terminated?.exitCode ?? null;
  const where = pod && pods.length > 1 ? ` (pod ${indexOf(pod)})` : '';
  if (pod?.status?.reason === 'Evicted')
    return {
      exitCode,
      reason: null,
      error: `Evicted${where}: ${pod.status.message ?? 'the node ran short of resources'}`.trim(),
      infrastructure: true,
    };
  const disruption = pod?.status?.conditions?.find(
    (c) => c.type === 'DisruptionTarget' && c.status === 'True',
  );
  if (disruption)
    return {
      exitCode,
      reason: null,
      error: `${disruption.reason ?? 'Disrupted'}${where}: ${disruption.message ?? 'the pod was stopped by the cluster'}`,
      infrastructure: true,
    };
  if (terminated?.reason === 'OOMKilled') {
    const limit = pod?.spec?.containers?.[0]?.resources?.limits?.memory;
    return {
      exitCode,
      reason: null,
      error: `OOMKilled${where}: the program used more memory than the container may${limit ? ` (${limit})` : ''}`,
      infrastructure: false,
    };
  }
  if (terminated?.reason && START_FAILURES.has(terminated.reason))
    return {
      exitCode,
      reason: null,
      error:
        `${terminated.reason}${where}: the container could not start: ${terminated.message ?? ''}`.trim(),
      infrastructure: false,
    };
  if (terminated) return { exitCode, reason: null, error: null, infrastructure: false };
  return {
    exitCode: null,
    reason: null,
    error: `the Kubernetes Job failed: ${condition.reason ?? 'Failed'}${condition.message ? `: ${condition.message}` : ''}`,
    infrastructure: true,
  };
}

function container(pod: V1Pod): ContainerStatus | undefined {
  return pod.status?.containerStatuses?.[0];
}

/** An Indexed Job's pod index (0 for other pods). */
export function indexOf(pod: V1Pod): number {
  return Number(pod.metadata?.labels?.[COMPLETION_INDEX_LABEL] ?? 0);
}
