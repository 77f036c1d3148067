import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { loadConfig } from '../src/config';
import { KUBERNETES_CALLS } from '../src/executors/kubernetes.client';
import { DEPLOY_DIR, deployManifests, workerRoleRules, type Manifest } from './helpers/kubernetes-deploy';

/** The manifests of deploy/kubernetes/ against what the service and its executor need. */

interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports?: { name: string; containerPort: number }[];
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  volumeMounts?: { name: string; mountPath: string }[];
}

interface PodSpec {
  serviceAccountName?: string;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  automountServiceAccountToken?: boolean;
  containers: Container[];
  volumes?: { name: string; persistentVolumeClaim?: { claimName: string } }[];
}

const manifests = deployManifests();
const ROOT = path.resolve(__dirname, '..');
const version = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string })
  .version;

function one(kind: string, name: string): Manifest {
  const found = manifests.filter((m) => m.kind === kind && m.metadata.name === name);
  expect(found).toHaveLength(1);
  return found[0];
}

function podSpec(deployment: string): PodSpec {
  return (one('Deployment', deployment) as unknown as { spec: { template: { spec: PodSpec } } }).spec.template
    .spec;
}

const settings = (one('ConfigMap', 'media-platform') as unknown as { data: Record<string, string> }).data;

describe('deploy/kubernetes', () => {
  it('lists every manifest file in its kustomization, and only those', () => {
    const kustomization = parse(readFileSync(path.join(DEPLOY_DIR, 'kustomization.yaml'), 'utf8')) as {
      resources: string[];
    };
    const files = readdirSync(DEPLOY_DIR).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
    expect([...kustomization.resources].sort()).toEqual(files.sort());
    for (const m of manifests) expect(m.metadata.name).toMatch(/^[a-z0-9-]+$/);
  });

  it('grants the worker exactly the calls the executor makes, no more', () => {
    const granted = workerRoleRules().flatMap((r) =>
      r.apiGroups.flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v) => `${g}/${res}/${v}`))),
    );
    const made = Object.values(KUBERNETES_CALLS).map((c) => `${c.group}/${c.resource}/${c.verb}`);
    expect(new Set(granted).size).toBe(granted.length);
    expect([...granted].sort()).toEqual([...new Set(made)].sort());
    expect(granted.sort()).toEqual(
      [
        'batch/jobs/create',
        'batch/jobs/get',
        'batch/jobs/list',
        'batch/jobs/watch',
        'batch/jobs/delete',
        '/pods/get',
        '/pods/list',
        '/pods/watch',
        '/pods/log/get',
      ].sort(),
    );
  });

  it('binds the Role to the worker’s account only; the API has no Kubernetes credentials', () => {
    const binding = one('RoleBinding', 'media-platform-worker') as unknown as {
      roleRef: { kind: string; name: string };
      subjects: { kind: string; name: string }[];
    };
    expect(binding.roleRef).toMatchObject({ kind: 'Role', name: 'media-platform-worker' });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'media-platform-worker' }]);
    expect(manifests.filter((m) => m.kind === 'RoleBinding' || m.kind === 'ClusterRoleBinding')).toHaveLength(
      1,
    );
    expect(manifests.filter((m) => m.kind === 'ClusterRole')).toEqual([]);
    expect(podSpec('media-platform-worker').serviceAccountName).toBe('media-platform-worker');
    const api = podSpec('media-platform-api');
    expect(api.serviceAccountName).toBe('media-platform-api');
    expect(api.automountServiceAccountToken).toBe(false);
    one('ServiceAccount', 'media-platform-api');
    one('ServiceAccount', 'media-platform-worker');
  });

  it('gives the worker the ReadWriteMany claim of KUBERNETES_JOBS_PVC at JOBS_DIR', () => {
    const claim = one('PersistentVolumeClaim', settings.KUBERNETES_JOBS_PVC) as unknown as {
      spec: { accessModes: string[] };
    };
    expect(claim.spec.accessModes).toEqual(['ReadWriteMany']);
    const worker = podSpec('media-platform-worker');
    const volume = worker.volumes!.find(
      (v) => v.persistentVolumeClaim?.claimName === settings.KUBERNETES_JOBS_PVC,
    );
    expect(volume).toBeDefined();
    expect(worker.containers[0].volumeMounts).toContainEqual({
      name: volume!.name,
      mountPath: settings.JOBS_DIR,
    });
    // The namespace the worker creates Jobs in is its own.
    expect(worker.containers[0].env).toContainEqual({
      name: 'KUBERNETES_NAMESPACE',
      valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } },
    });
  });

  it.each([
    ['media-platform-api', 'api'],
    ['media-platform-worker', 'worker'],
  ])('runs %s as the %s role with liveness and readiness probes on a port it declares', (name, role) => {
    const [container] = podSpec(name).containers;
    expect(container.env).toContainEqual({ name: 'ROLES', value: role });
    expect(container.envFrom).toEqual([
      { configMapRef: { name: 'media-platform' } },
      { secretRef: { name: 'media-platform' } },
    ]);
    const ports = (container.ports ?? []).map((p) => p.name);
    expect(container.livenessProbe?.httpGet).toMatchObject({ path: '/healthz' });
    expect(container.readinessProbe?.httpGet).toMatchObject({ path: '/readyz' });
    expect(ports).toContain(container.livenessProbe!.httpGet!.port);
    expect(ports).toContain(container.readinessProbe!.httpGet!.port);
  });

  it('runs the image `npm run image` builds, as the image runs itself', () => {
    const image = `media-platform:${version}`;
    // The Containerfile's user, which the pods must be allowed to run as.
    const uid = Number(/^USER (\d+):\d+$/m.exec(readFileSync(path.join(ROOT, 'Containerfile'), 'utf8'))![1]);
    for (const name of ['media-platform-api', 'media-platform-worker']) {
      const pod = podSpec(name);
      expect(pod.containers.map((c) => c.image)).toEqual([image]);
      // The image's entrypoint (tini, PID 1) and command stay: no override.
      expect(pod.containers.map((c) => [c.command, c.args])).toEqual([[undefined, undefined]]);
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: uid });
    }
    expect(uid).toBeGreaterThan(0);
    // Built-in models' jobs run the service's own image.
    expect(settings.KUBERNETES_BUILTIN_IMAGE).toBe(image);
  });

  it('has settings the service accepts', () => {
    const c = loadConfig({ ...settings, ROLES: 'worker', DATABASE_URL: 'postgres://u:p@db:5432/media' });
    expect(c.executor).toBe('kubernetes');
    expect(c.jobsDir).toBe('/var/lib/media-platform/jobs');
    expect(c.kubernetes).toMatchObject({
      jobsPvc: 'media-platform-jobs',
      builtinImage: 'media-platform:0.1.0',
      imagePullGraceSeconds: 120,
    });
  });
});
