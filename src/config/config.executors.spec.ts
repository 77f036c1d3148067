import { mkdtempSync, writeFileSync } from 'node:fs';
import os, { availableParallelism } from 'node:os';
import path from 'node:path';
import { DEFAULT_PRICES } from '../common/price-list';
import { ConfigError, loadConfig } from '../config';

describe('loadConfig', () => {
  describe('executors', () => {
    it('has the documented defaults: jobs under DATA_DIR, as many jobs as CPUs locally', () => {
      const c = loadConfig({ DATA_DIR: '/srv/media' });
      expect(c).toMatchObject({
        jobsDir: '/srv/media/jobs',
        workerConcurrency: availableParallelism(),
        machineTypes: null,
        slurmContainerRuntime: 'none',
        slurmPollSeconds: 2,
        slurmArrayTaskLimit: 0,
        clusterRetrySeconds: 3600,
      });
      expect(loadConfig({ SLURM_ARRAY_TASK_LIMIT: '50' }).slurmArrayTaskLimit).toBe(50);
      expect(loadConfig({ LOCAL_EXECUTOR_CONCURRENCY: '3' }).workerConcurrency).toBe(3);
    });

    it('lets a worker on a cluster follow thousands of jobs, not as many as it has CPUs', () => {
      const c = loadConfig({ EXECUTOR: 'slurm', JOBS_DIR: '/shared/jobs', WORKER_CONCURRENCY: '20000' });
      expect(c).toMatchObject({ executor: 'slurm', jobsDir: '/shared/jobs', workerConcurrency: 20000 });
      expect(loadConfig({ EXECUTOR: 'slurm' }).workerConcurrency).toBe(5000);
    });

    it('refuses bad executor settings, naming each', () => {
      let error: ConfigError | undefined;
      try {
        loadConfig({
          EXECUTOR: 'slurm',
          JOBS_DIR: '/shared/a,b',
          WORKER_CONCURRENCY: '0',
          SLURM_CONTAINER_RUNTIME: 'docker',
          SLURM_POLL_SECONDS: '0',
          SLURM_ARRAY_TASK_LIMIT: '-1',
        });
      } catch (e) {
        error = e as ConfigError;
      }
      expect(error!.problems.map((p) => p.split(':')[0]).sort()).toEqual([
        'JOBS_DIR',
        'SLURM_ARRAY_TASK_LIMIT',
        'SLURM_CONTAINER_RUNTIME',
        'SLURM_POLL_SECONDS',
        'WORKER_CONCURRENCY',
      ]);
    });

    it('reads machine types from YAML or JSON and names what is wrong in the file', () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'machines-'));
      const yaml = path.join(dir, 'machines.yaml');
      writeFileSync(
        yaml,
        [
          'machine_types:',
          '  a100:',
          '    description: one NVIDIA A100',
          '    slurm: { partition: gpu, gres: "gpu:a100:1", cpus: 8, memory: 64G, account: ml, qos: normal }',
          '    kubernetes:',
          '      resources: { requests: { cpu: "8", memory: 64Gi }, limits: { nvidia.com/gpu: 1 } }',
          '  cpu: {}',
        ].join('\n'),
      );
      const types = loadConfig({ MACHINE_TYPES_FILE: yaml }).machineTypes!;
      expect([...types.keys()]).toEqual(['a100', 'cpu']);
      expect(types.get('a100')).toEqual({
        description: 'one NVIDIA A100',
        slurm: { partition: 'gpu', gres: 'gpu:a100:1', cpus: 8, memory: '64G', account: 'ml', qos: 'normal' },
        kubernetes: {
          resources: { requests: { cpu: '8', memory: '64Gi' }, limits: { 'nvidia.com/gpu': '1' } },
        },
      });
      const json = path.join(dir, 'machines.json');
      writeFileSync(json, JSON.stringify({ machine_types: { small: { slurm: { cpus: 1 } } } }));
      expect(loadConfig({ MACHINE_TYPES_FILE: json }).machineTypes!.get('small')).toEqual({
        slurm: { cpus: 1 },
      });
      const bad = path.join(dir, 'bad.yaml');
      writeFileSync(
        bad,
        'machine_types:\n  a100:\n    slurm: { partition: "gpu --wrap=x", cpus: many, nodes: 2 }\n    gpu: 1\n',
      );
      expect(() => loadConfig({ MACHINE_TYPES_FILE: bad })).toThrow(
        /MACHINE_TYPES_FILE: .*unknown key "gpu".*a100\.slurm\.partition.*a100\.slurm\.cpus.*unknown key "nodes"/,
      );
      expect(() => loadConfig({ MACHINE_TYPES_FILE: path.join(dir, 'missing.yaml') })).toThrow(
        /MACHINE_TYPES_FILE: cannot read .* \(ENOENT\)/,
      );
    });
  });

  describe('billing', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'prices-'));
    const file = (name: string, text: string) => {
      const f = path.join(dir, name);
      writeFileSync(f, text);
      return f;
    };

    it('uses the built-in price list without PRICES_FILE', () => {
      expect(loadConfig({}).prices).toBe(DEFAULT_PRICES);
    });

    it('reads PRICES_FILE as YAML or JSON', () => {
      const yaml = file(
        'p.yaml',
        'currency: EUR\nper_machine_second: {default: 0.001}\nstorage_per_gb_month: 0.1\n',
      );
      expect(loadConfig({ PRICES_FILE: yaml }).prices).toMatchObject({ currency: 'EUR', minorDigits: 2 });
      const json = file(
        'p.json',
        JSON.stringify({ currency: 'JPY', per_machine_second: { default: '1' }, storage_per_gb_month: '5' }),
      );
      expect(loadConfig({ PRICES_FILE: json }).prices).toMatchObject({ currency: 'JPY', minorDigits: 0 });
    });

    it('fails fast naming PRICES_FILE and the problem', () => {
      expect(() => loadConfig({ PRICES_FILE: path.join(dir, 'missing.yaml') })).toThrow(
        /PRICES_FILE: cannot read ".*missing.yaml" \(ENOENT\)/,
      );
      const bad = file('bad.yaml', 'currency: USD\nper_machine_second: {gpu: 1}\nstorage_per_gb_month: 1\n');
      expect(() => loadConfig({ PRICES_FILE: bad })).toThrow(
        /PRICES_FILE: ".*bad.yaml": per_machine_second.default: required/,
      );
    });
  });

  describe('kubernetes', () => {
    it('has the documented defaults', () => {
      expect(loadConfig({}).kubernetes).toEqual({
        kubeconfig: undefined,
        namespace: 'default',
        jobsPvc: undefined,
        imagePullGraceSeconds: 120,
        unschedulableSeconds: 600,
        imagePullSecrets: [],
        jobServiceAccount: undefined,
        builtinImage: undefined,
        jobTtlSeconds: 86400,
        createConcurrency: 8,
      });
    });

    it('reads every setting', () => {
      const c = loadConfig({
        KUBECONFIG: '/home/me/.kube/config',
        KUBERNETES_NAMESPACE: 'media',
        KUBERNETES_JOBS_PVC: 'media-platform-jobs',
        KUBERNETES_IMAGE_PULL_GRACE_SECONDS: '30',
        KUBERNETES_UNSCHEDULABLE_SECONDS: '900',
        KUBERNETES_IMAGE_PULL_SECRETS: 'registry-a, registry-b',
        KUBERNETES_JOB_SERVICE_ACCOUNT: 'media-jobs',
        KUBERNETES_BUILTIN_IMAGE: 'registry.example/media-platform:1.0',
        KUBERNETES_JOB_TTL_SECONDS: '3600',
        KUBERNETES_CREATE_CONCURRENCY: '2',
      });
      expect(c.kubernetes).toEqual({
        kubeconfig: '/home/me/.kube/config',
        namespace: 'media',
        jobsPvc: 'media-platform-jobs',
        imagePullGraceSeconds: 30,
        unschedulableSeconds: 900,
        imagePullSecrets: ['registry-a', 'registry-b'],
        jobServiceAccount: 'media-jobs',
        builtinImage: 'registry.example/media-platform:1.0',
        jobTtlSeconds: 3600,
        createConcurrency: 2,
      });
    });

    it('refuses names Kubernetes would refuse, naming each variable', () => {
      let error: ConfigError | undefined;
      try {
        loadConfig({
          KUBERNETES_NAMESPACE: 'Media_NS',
          KUBERNETES_JOBS_PVC: 'jobs/claim',
          KUBERNETES_IMAGE_PULL_SECRETS: 'ok,Not OK',
          KUBERNETES_JOB_SERVICE_ACCOUNT: '-x',
          KUBERNETES_BUILTIN_IMAGE: 'two words',
          KUBERNETES_IMAGE_PULL_GRACE_SECONDS: '-1',
          KUBERNETES_CREATE_CONCURRENCY: '0',
        });
      } catch (err) {
        error = err as ConfigError;
      }
      expect(error!.problems.map((p) => p.split(':')[0]).sort()).toEqual([
        'KUBERNETES_BUILTIN_IMAGE',
        'KUBERNETES_CREATE_CONCURRENCY',
        'KUBERNETES_IMAGE_PULL_GRACE_SECONDS',
        'KUBERNETES_IMAGE_PULL_SECRETS',
        'KUBERNETES_JOBS_PVC',
        'KUBERNETES_JOB_SERVICE_ACCOUNT',
        'KUBERNETES_NAMESPACE',
      ]);
      expect(error!.problems).toContain(
        'KUBERNETES_IMAGE_PULL_SECRETS: expected Secret names (DNS subdomains), got "Not OK"',
      );
    });

    it('accepts EXECUTOR=kubernetes with the jobs claim, and asks for the claim without it', () => {
      expect(loadConfig({ EXECUTOR: 'kubernetes', KUBERNETES_JOBS_PVC: 'jobs' }).executor).toBe('kubernetes');
      expect(() => loadConfig({ EXECUTOR: 'kubernetes' })).toThrow(
        /KUBERNETES_JOBS_PVC: required when EXECUTOR=kubernetes/,
      );
    });

    it("names the problems of a machine type's kubernetes part", () => {
      const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'k8s-types-')), 'types.yaml');
      writeFileSync(
        file,
        'machine_types:\n  gpu:\n    kubernetes: { resources: { limits: { nvidia.com/gpu: lots } }, pods: 2 }\n',
      );
      expect(() => loadConfig({ MACHINE_TYPES_FILE: file })).toThrow(
        /machine_types\.gpu\.kubernetes\.pods: unknown key.*machine_types\.gpu\.kubernetes\.resources\.limits\.nvidia\.com\/gpu: "lots" is not a quantity/,
      );
    });
  });
});
