import type { V1Job, V1Pod } from '@kubernetes/client-node';
import { jobState } from './kubernetes.states';

/** Jobs and pods as the API server sends them (JSON of a watch event). */
function job(conditions: { type: string; reason?: string; message?: string }[] = []): V1Job {
  return {
    metadata: { name: 'media-job-x', uid: 'u1' },
    status: { conditions: conditions.map((c) => ({ status: 'True', ...c })) },
  } as unknown as V1Job;
}

function pod(
  phase: string,
  state: Record<string, unknown>,
  more: {
    node?: string;
    index?: number;
    reason?: string;
    message?: string;
    conditions?: object[];
    memory?: string;
  } = {},
): V1Pod {
  return {
    metadata: {
      name: `pod-${more.index ?? 0}`,
      labels:
        more.index === undefined ? {} : { 'batch.kubernetes.io/job-completion-index': String(more.index) },
    },
    spec: {
      nodeName: more.node,
      containers: [
        {
          name: 'job',
          image: 'registry.example/m:1',
          resources: more.memory ? { limits: { memory: more.memory } } : {},
        },
      ],
    },
    status: {
      phase,
      reason: more.reason,
      message: more.message,
      conditions: more.conditions ?? [],
      containerStatuses: [{ name: 'job', state }],
    },
  } as unknown as V1Pod;
}

const terminated = (exitCode: number, reason = exitCode ? 'Error' : 'Completed', message?: string) => ({
  terminated: { exitCode, reason, message },
});

describe('jobState', () => {
  it('waits for the Job controller before there is a pod', () => {
    expect(jobState(job(), [])).toEqual({
      state: 'pending',
      detail: 'waiting for the Job controller to create its pod',
      problem: null,
      nodes: [],
    });
  });

  it('shows why a pod waits, and where', () => {
    expect(
      jobState(job(), [pod('Pending', { waiting: { reason: 'ContainerCreating' } }, { node: 'n1' })]),
    ).toEqual({
      state: 'pending',
      detail: 'ContainerCreating on n1',
      problem: null,
      nodes: ['n1'],
    });
  });

  it('names the scheduler’s message and an image that cannot be pulled as problems', () => {
    const unschedulable = pod('Pending', {});
    unschedulable.status!.conditions = [
      {
        type: 'PodScheduled',
        status: 'False',
        reason: 'Unschedulable',
        message: '0/3 nodes are available: 3 Insufficient nvidia.com/gpu.',
      },
    ] as never;
    expect(jobState(job(), [unschedulable])).toMatchObject({
      state: 'pending',
      problem: {
        kind: 'unschedulable',
        message: 'Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.',
      },
    });
    expect(
      jobState(job(), [
        pod('Pending', { waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image' } }),
      ]),
    ).toMatchObject({
      problem: {
        kind: 'image',
        message: 'ImagePullBackOff: cannot pull the image "registry.example/m:1": Back-off pulling image',
      },
    });
    expect(
      jobState(job(), [
        pod('Pending', {
          waiting: { reason: 'CreateContainerConfigError', message: 'secret "x" not found' },
        }),
      ]),
    ).toMatchObject({
      problem: { kind: 'config', message: 'CreateContainerConfigError: secret "x" not found' },
    });
  });

  it('is running while a container runs, with every node of an Indexed Job', () => {
    expect(
      jobState(job(), [
        pod('Running', { running: {} }, { node: 'n2', index: 1 }),
        pod('Running', { running: {} }, { node: 'n1', index: 0 }),
      ]),
    ).toEqual({ state: 'running', nodes: ['n1', 'n2'] });
  });

  it('ends only once the pod watch has caught up with the Job’s condition', () => {
    const complete = job([{ type: 'Complete' }]);
    expect(jobState(complete, [pod('Running', { running: {} }, { node: 'n1' })])).toEqual({
      state: 'running',
      nodes: ['n1'],
    });
    expect(jobState(complete, [pod('Succeeded', terminated(0), { node: 'n1' })])).toEqual({
      state: 'ended',
      exitCode: 0,
      reason: null,
      error: null,
      infrastructure: false,
      nodes: ['n1'],
    });
    // Every pod has stopped, the Job is not yet marked: still running.
    expect(jobState(job(), [pod('Failed', terminated(2))])).toMatchObject({ state: 'running' });
  });

  it('gives the exit code of a pod that failed', () => {
    expect(
      jobState(job([{ type: 'Failed', reason: 'BackoffLimitExceeded' }]), [pod('Failed', terminated(3))]),
    ).toMatchObject({ state: 'ended', exitCode: 3, reason: null, error: null, infrastructure: false });
  });

  it('names OOMKilled with the memory limit, and which pod of several', () => {
    expect(
      jobState(job([{ type: 'Failed', reason: 'BackoffLimitExceeded' }]), [
        pod('Succeeded', terminated(0), { index: 0 }),
        pod('Failed', terminated(137, 'OOMKilled'), { index: 1, memory: '8Gi' }),
      ]),
    ).toMatchObject({
      exitCode: 137,
      error: 'OOMKilled (pod 1): the program used more memory than the container may (8Gi)',
      infrastructure: false,
    });
  });

  it('calls an eviction or another disruption a failure of the infrastructure', () => {
    const failed = job([{ type: 'Failed', reason: 'BackoffLimitExceeded' }]);
    expect(
      jobState(failed, [
        pod('Failed', terminated(137), {
          reason: 'Evicted',
          message: 'The node was low on resource: memory.',
        }),
      ]),
    ).toMatchObject({ error: 'Evicted: The node was low on resource: memory.', infrastructure: true });
    expect(
      jobState(failed, [
        pod('Failed', terminated(143), {
          conditions: [
            {
              type: 'DisruptionTarget',
              status: 'True',
              reason: 'PreemptionByScheduler',
              message: 'preempted',
            },
          ],
        }),
      ]),
    ).toMatchObject({ error: 'PreemptionByScheduler: preempted', infrastructure: true });
  });

  it('names a deadline and a lost Job', () => {
    expect(
      jobState(
        job([
          {
            type: 'Failed',
            reason: 'DeadlineExceeded',
            message: 'Job was active longer than specified deadline',
          },
        ]),
        [pod('Running', { running: {} })],
      ),
    ).toMatchObject({
      state: 'ended',
      reason: 'timeout',
      error: 'DeadlineExceeded: Job was active longer than specified deadline',
    });
    expect(jobState(undefined, [])).toMatchObject({ state: 'ended', reason: 'lost', infrastructure: true });
  });

  it('says what it knows of a failed Job whose pods are gone', () => {
    expect(
      jobState(job([{ type: 'Failed', reason: 'PodFailurePolicy', message: 'matched a rule' }]), []),
    ).toMatchObject({
      exitCode: null,
      error: 'the Kubernetes Job failed: PodFailurePolicy: matched a rule',
    });
  });
});
