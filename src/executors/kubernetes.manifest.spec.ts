import { parse } from 'yaml';
import { parseKubernetesMachineType, type KubernetesMachineType } from '../common/machine-types';
import type { JobSpec } from './executor.port';
import {
  buildJobManifest,
  escapeExpansion,
  jobNameOf,
  type KubernetesJobSettings,
} from './kubernetes.manifest';

/** Machine types in the shape of MACHINE_TYPES_FILE (docs/executors.md). */
const FILE = parse(`
machine_types:
  a100:
    description: one NVIDIA A100
    slurm: { partition: gpu, gres: "gpu:a100:1" }
    kubernetes:
      resources: { requests: { cpu: "8", memory: 64Gi }, limits: { nvidia.com/gpu: 1 } }
      nodeSelector: { nvidia.com/gpu.product: NVIDIA-A100 }
      tolerations: [{ key: nvidia.com/gpu, operator: Exists, effect: NoSchedule }]
  cpu:
    kubernetes:
      resources: { requests: { cpu: 500m, memory: 1Gi }, limits: { memory: 2Gi } }
  spot:
    kubernetes:
      nodeSelector: { pool: spot }
      tolerations: [{ key: spot, operator: Equal, value: "true", effect: NoExecute, tolerationSeconds: 60 }]
  bare:
    description: nothing Kubernetes-specific
`) as { machine_types: Record<string, { kubernetes?: unknown }> };

const types: Record<string, KubernetesMachineType | undefined> = Object.fromEntries(
  Object.entries(FILE.machine_types).map(([name, t]) => [
    name,
    t.kubernetes === undefined
      ? undefined
      : parseKubernetesMachineType(t.kubernetes, `machine_types.${name}.kubernetes`),
  ]),
);

const JOB_ID = '0b6c7a4e-2a1f-4a8e-9a53-6f0b1c2d3e4f';
const OWNER_ID = '9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a';

const settings: KubernetesJobSettings = {
  namespace: 'media',
  jobsPvc: 'media-jobs',
  jobsDir: '/var/lib/media/jobs',
  ttlSecondsAfterFinished: 3600,
  imagePullSecrets: [],
  serviceAccount: undefined,
  builtinImage: 'registry.example/media-platform:1.0',
  programs: { 'media-demo': ['/usr/local/bin/node', '/app/dist/src/demo-models/media-demo.js'] },
};

function spec(overrides: Partial<JobSpec> = {}): JobSpec {
  return {
    jobId: JOB_ID,
    argv: ['python', 'infer.py', '--input', 'inputs/a.png'],
    env: {},
    container: 'registry.example/models/upscale:2',
    machineType: 'a100',
    machineCount: 1,
    timeoutSeconds: 900,
    inputs: ['inputs/a.png'],
    workDir: `/var/lib/media/jobs/${JOB_ID}`,
    outputDir: `/var/lib/media/jobs/${JOB_ID}/output`,
    owner: { type: 'user', id: OWNER_ID },
    ...overrides,
  };
}

function podSpec(job: ReturnType<typeof buildJobManifest>) {
  return job.spec!.template.spec!;
}

describe('buildJobManifest', () => {
  it('makes the a100 Job: GPU resources, node selector, tolerations, our labels, no retries', () => {
    const job = buildJobManifest(spec(), types.a100, settings);
    const labels = {
      'app.kubernetes.io/managed-by': 'media-platform',
      'media-platform/job-id': JOB_ID,
      'media-platform/owner-id': OWNER_ID,
      'media-platform/owner-type': 'user',
    };
    expect(job).toEqual({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name: `media-job-${JOB_ID}`,
        namespace: 'media',
        labels,
        annotations: { 'media-platform/machine-type': 'a100' },
      },
      spec: {
        backoffLimit: 0,
        activeDeadlineSeconds: 900,
        ttlSecondsAfterFinished: 3600,
        template: {
          metadata: { labels },
          spec: {
            restartPolicy: 'Never',
            automountServiceAccountToken: false,
            enableServiceLinks: false,
            nodeSelector: { 'nvidia.com/gpu.product': 'NVIDIA-A100' },
            tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
            volumes: [{ name: 'jobs', persistentVolumeClaim: { claimName: 'media-jobs' } }],
            containers: [
              {
                name: 'job',
                image: 'registry.example/models/upscale:2',
                command: ['python'],
                args: ['infer.py', '--input', 'inputs/a.png'],
                workingDir: `/var/lib/media/jobs/${JOB_ID}`,
                env: [
                  { name: 'HOME', value: `/var/lib/media/jobs/${JOB_ID}` },
                  { name: 'TMPDIR', value: `/var/lib/media/jobs/${JOB_ID}` },
                  { name: 'LANG', value: 'C.UTF-8' },
                  { name: 'OUTPUT_DIR', value: `/var/lib/media/jobs/${JOB_ID}/output` },
                  { name: 'MEDIA_JOB_ID', value: JOB_ID },
                ],
                resources: {
                  requests: { cpu: '8', memory: '64Gi' },
                  limits: { 'nvidia.com/gpu': '1' },
                },
                volumeMounts: [{ name: 'jobs', mountPath: `/var/lib/media/jobs/${JOB_ID}`, subPath: JOB_ID }],
              },
            ],
          },
        },
      },
    });
  });

  it('makes the cpu Job with requests and a memory limit only', () => {
    const pod = podSpec(buildJobManifest(spec({ machineType: 'cpu' }), types.cpu, settings));
    expect(pod.containers[0].resources).toEqual({
      requests: { cpu: '500m', memory: '1Gi' },
      limits: { memory: '2Gi' },
    });
    expect(pod.nodeSelector).toBeUndefined();
    expect(pod.tolerations).toBeUndefined();
  });

  it('makes the spot Job with a node selector and a timed toleration, no resources', () => {
    const pod = podSpec(buildJobManifest(spec({ machineType: 'spot' }), types.spot, settings));
    expect(pod.nodeSelector).toEqual({ pool: 'spot' });
    expect(pod.tolerations).toEqual([
      { key: 'spot', operator: 'Equal', value: 'true', effect: 'NoExecute', tolerationSeconds: 60 },
    ]);
    expect(pod.containers[0].resources).toBeUndefined();
  });

  it('makes a plain Job for a machine type without a kubernetes part', () => {
    const job = buildJobManifest(spec({ machineType: 'bare' }), types.bare, settings);
    const pod = podSpec(job);
    expect(pod.containers[0].resources).toBeUndefined();
    expect(pod.nodeSelector).toBeUndefined();
    expect(pod.tolerations).toBeUndefined();
    expect(job.metadata!.annotations).toEqual({ 'media-platform/machine-type': 'bare' });
  });

  it('runs machine_count > 1 as an Indexed Job of that many pods', () => {
    const job = buildJobManifest(spec({ machineCount: 4 }), types.a100, settings);
    expect(job.spec).toMatchObject({
      completionMode: 'Indexed',
      completions: 4,
      parallelism: 4,
      backoffLimit: 0,
    });
    expect(buildJobManifest(spec(), types.a100, settings).spec!.completionMode).toBeUndefined();
    expect(() => buildJobManifest(spec({ machineCount: 0 }), types.a100, settings)).toThrow(/machine count/);
  });

  it('escapes every $ of the argv and the environment, so Kubernetes expands nothing', () => {
    const hostile = [
      '$(OUTPUT_DIR)',
      '$$(HOME)',
      '; rm -rf /',
      '`id`',
      'a\nb',
      '-x',
      '$',
      'cost: $5',
      '$(id)',
    ];
    const job = buildJobManifest(
      spec({ argv: ['$(PROGRAM)', ...hostile], env: { GREETING: 'hi $(HOME)' } }),
      types.a100,
      settings,
    );
    const container = podSpec(job).containers[0];
    expect(container.command).toEqual(['$$(PROGRAM)']);
    expect(container.args).toEqual([
      '$$(OUTPUT_DIR)',
      '$$$$(HOME)',
      '; rm -rf /',
      '`id`',
      'a\nb',
      '-x',
      '$$',
      'cost: $$5',
      '$$(id)',
    ]);
    expect(container.env).toContainEqual({ name: 'GREETING', value: 'hi $$(HOME)' });
  });

  it('cannot let an extra variable replace OUTPUT_DIR or the job marker', () => {
    const env = podSpec(
      buildJobManifest(spec({ env: { OUTPUT_DIR: '/etc', MEDIA_JOB_ID: 'other' } }), undefined, settings),
    ).containers[0].env!;
    expect(env.filter((e) => e.name === 'OUTPUT_DIR')).toEqual([
      { name: 'OUTPUT_DIR', value: `/var/lib/media/jobs/${JOB_ID}/output` },
    ]);
    expect(env.filter((e) => e.name === 'MEDIA_JOB_ID')).toEqual([{ name: 'MEDIA_JOB_ID', value: JOB_ID }]);
  });

  it('names pull secrets and the pods’ service account when they are set', () => {
    const pod = podSpec(
      buildJobManifest(spec(), types.a100, {
        ...settings,
        imagePullSecrets: ['registry-a', 'registry-b'],
        serviceAccount: 'media-jobs',
      }),
    );
    expect(pod.imagePullSecrets).toEqual([{ name: 'registry-a' }, { name: 'registry-b' }]);
    expect(pod.serviceAccountName).toBe('media-jobs');
    expect(pod.automountServiceAccountToken).toBeUndefined();
  });

  it('runs builtin/ containers from the service image with the program resolved', () => {
    const container = podSpec(
      buildJobManifest(
        spec({ container: 'builtin/media-demo', argv: ['media-demo', 'wordcount', 'inputs/x.txt'] }),
        undefined,
        settings,
      ),
    ).containers[0];
    expect(container.image).toBe('registry.example/media-platform:1.0');
    expect(container.command).toEqual(['/usr/local/bin/node']);
    expect(container.args).toEqual(['/app/dist/src/demo-models/media-demo.js', 'wordcount', 'inputs/x.txt']);
    // An unknown name is not resolved, and never through the prototype.
    const other = podSpec(
      buildJobManifest(spec({ container: 'builtin/x', argv: ['constructor', 'a'] }), undefined, settings),
    ).containers[0];
    expect([other.command, other.args]).toEqual([['constructor'], ['a']]);
    expect(() =>
      buildJobManifest(spec({ container: 'builtin/media-demo' }), undefined, {
        ...settings,
        builtinImage: undefined,
      }),
    ).toThrow(/KUBERNETES_BUILTIN_IMAGE/);
  });

  it('refuses a job directory outside JOBS_DIR', () => {
    for (const workDir of ['/tmp/elsewhere', '/var/lib/media/jobs', '/var/lib/media/jobs/../x'])
      expect(() => buildJobManifest(spec({ workDir }), undefined, settings)).toThrow(/not below JOBS_DIR/);
  });

  it('names Jobs by our job id', () => {
    expect(jobNameOf(JOB_ID)).toBe(`media-job-${JOB_ID}`);
    expect(jobNameOf(JOB_ID).length).toBeLessThanOrEqual(63);
  });
});

describe('escapeExpansion', () => {
  it('doubles every $', () => {
    expect(escapeExpansion('$(A) $$ $')).toBe('$$(A) $$$$ $$');
    expect(escapeExpansion('no dollars')).toBe('no dollars');
  });
});

describe('parseKubernetesMachineType', () => {
  it('turns numeric quantities into strings', () => {
    expect(types.a100!.resources!.limits).toEqual({ 'nvidia.com/gpu': '1' });
  });

  it('names every problem with its place', () => {
    let message = '';
    try {
      parseKubernetesMachineType(
        {
          resource: {},
          resources: { requests: { cpu: 'eight' }, limit: {} },
          nodeSelector: { a: 1 },
          tolerations: [{ operator: 'Maybe', effect: 'Never', colour: 'red' }, 'x'],
        },
        'machine_types.x.kubernetes',
      );
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message.split('; ')).toEqual([
      'machine_types.x.kubernetes.resource: unknown key (resources, nodeSelector, tolerations)',
      'machine_types.x.kubernetes.resources.requests.cpu: "eight" is not a quantity (e.g. 2, 500m, 64Gi)',
      'machine_types.x.kubernetes.resources.limit: unknown key (requests, limits)',
      'machine_types.x.kubernetes.nodeSelector: expected a mapping of label names to string values',
      'machine_types.x.kubernetes.tolerations[0]: unknown key(s) colour',
      'machine_types.x.kubernetes.tolerations[0].operator: expected Exists or Equal',
      'machine_types.x.kubernetes.tolerations[0].effect: expected NoSchedule, PreferNoSchedule or NoExecute',
      'machine_types.x.kubernetes.tolerations[1]: expected a mapping',
    ]);
    expect(() => parseKubernetesMachineType([], 'm')).toThrow('m: expected a mapping');
  });
});
