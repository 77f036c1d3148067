import { availableParallelism } from 'node:os';
import path from 'node:path';
import type { MachineTypes } from '../common/machine-types';
import type { PriceList } from '../common/price-list';
import type { Parser } from './config.parser';

/** Where and how jobs run: the executor, its limits, the worker, the clusters, and their prices. */

export const SLURM_CONTAINER_RUNTIMES = ['none', 'pyxis', 'apptainer', 'oci'] as const;
export type SlurmContainerRuntime = (typeof SLURM_CONTAINER_RUNTIMES)[number];

/** Jobs a worker follows at once on a cluster by default (each costs a little memory, no process). */
export const CLUSTER_WORKER_CONCURRENCY = 5000;

export interface ExecutorConfig {
  executor: 'local' | 'slurm' | 'kubernetes';
  localExecutorTrust: 'builtin' | 'any';
  /** Jobs the local executor runs at once. */
  localExecutorConcurrency: number;
  /** PATH of the processes the service starts (local jobs, the chat bridge's, Slurm jobs and commands). */
  localExecutorPath: string;
  /** Per local job (0: none): memory of its processes, open files per process, processes. */
  localExecutorMemoryMb: number;
  localExecutorMaxOpenFiles: number;
  localExecutorMaxProcesses: number;
  /** Jobs' working directories; shared with the compute nodes for cluster executors. */
  jobsDir: string;
  /** Jobs one worker process dispatches and follows at once. */
  workerConcurrency: number;
  /** `MACHINE_TYPES_FILE`: what each machine type means per executor; null: none configured. */
  machineTypes: MachineTypes | null;
  /** How a model's container runs on Slurm. */
  slurmContainerRuntime: SlurmContainerRuntime;
  /** How often a worker reads its jobs' states from Slurm (one `squeue` per poll). */
  slurmPollSeconds: number;
  /** Slurm's own `SLURM_CONF`, handed to the Slurm commands the worker runs. */
  slurmConf: string | undefined;
  /** Tasks of one job array (a batch's jobs on Slurm) that may run at once (`%limit`); 0: no limit. */
  slurmArrayTaskLimit: number;
  /**
   * How long a cluster job's submission (or cancel) is tried again while the cluster cannot be
   * reached (Slurm's controller, the Kubernetes API) before the job fails (infrastructure).
   */
  clusterRetrySeconds: number;
  /** Prices of compute and storage (`PRICES_FILE`, docs/billing.md). */
  prices: PriceList;
  /** The Kubernetes executor (docs/executors-kubernetes.md). */
  kubernetes: KubernetesConfig;
}

export interface KubernetesConfig {
  /** `KUBECONFIG`: a kubeconfig file; unset: the pod's own service account (in-cluster). */
  kubeconfig: string | undefined;
  namespace: string;
  /** The ReadWriteMany claim that holds JOBS_DIR; the job pods mount their directory from it. */
  jobsPvc: string | undefined;
  imagePullGraceSeconds: number;
  unschedulableSeconds: number;
  imagePullSecrets: readonly string[];
  /** The job pods' service account; unset: none (no API token in job pods). */
  jobServiceAccount: string | undefined;
  /** The service's own image, for built-in models (`builtin/...` containers). */
  builtinImage: string | undefined;
  /** How long a finished Job stays in the cluster (`ttlSecondsAfterFinished`). */
  jobTtlSeconds: number;
  /** Job creations one worker has in flight at once (submitMany: a batch's jobs). */
  createConcurrency: number;
}

/** DNS-1123 names, as Kubernetes wants them for namespaces (labels) and objects (subdomains). */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
export const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export function executorConfig(p: Parser, { dataDir }: { dataDir: string }): ExecutorConfig {
  const executor = p.oneOf('EXECUTOR', ['local', 'slurm', 'kubernetes'] as const, 'local');
  const jobsDir = path.resolve(p.str('JOBS_DIR', path.join(dataDir, 'jobs')));
  // Container runtimes take the job's directory in mount lists separated by `,` and `:`.
  if (executor === 'slurm' && /[,:\n]/.test(jobsDir))
    p.problems.push(`JOBS_DIR: "${jobsDir}" must not contain commas, colons or newlines with EXECUTOR=slurm`);
  const localExecutorConcurrency = p.int('LOCAL_EXECUTOR_CONCURRENCY', availableParallelism(), 1, 1024);
  const kubernetes = kubernetesConfig(p);
  // Job pods mount their directory from the claim that holds JOBS_DIR.
  if (executor === 'kubernetes' && !kubernetes.jobsPvc && p.raw('KUBERNETES_JOBS_PVC') === undefined)
    p.problems.push(
      'KUBERNETES_JOBS_PVC: required when EXECUTOR=kubernetes (the ReadWriteMany claim holding JOBS_DIR)',
    );
  return {
    executor,
    localExecutorTrust: p.oneOf('LOCAL_EXECUTOR_TRUST', ['builtin', 'any'] as const, 'builtin'),
    localExecutorConcurrency,
    localExecutorPath: p.str('PATH', '/usr/local/bin:/usr/bin:/bin'),
    localExecutorMemoryMb: p.int('LOCAL_EXECUTOR_MEMORY_MB', 2048, 0, 1_048_576),
    localExecutorMaxOpenFiles: p.int('LOCAL_EXECUTOR_MAX_OPEN_FILES', 1024, 0, 1_048_576),
    localExecutorMaxProcesses: p.int('LOCAL_EXECUTOR_MAX_PROCESSES', 256, 0, 1_000_000),
    jobsDir,
    // A local job takes a CPU; a cluster job costs the worker only what following it costs.
    workerConcurrency: p.int(
      'WORKER_CONCURRENCY',
      executor === 'local' ? localExecutorConcurrency : CLUSTER_WORKER_CONCURRENCY,
      1,
      100_000,
    ),
    machineTypes: p.machineTypes('MACHINE_TYPES_FILE'),
    slurmContainerRuntime: p.oneOf('SLURM_CONTAINER_RUNTIME', SLURM_CONTAINER_RUNTIMES, 'none'),
    slurmPollSeconds: p.int('SLURM_POLL_SECONDS', 2, 1, 600),
    slurmConf: p.raw('SLURM_CONF'),
    slurmArrayTaskLimit: p.int('SLURM_ARRAY_TASK_LIMIT', 0, 0, 1_000_000),
    clusterRetrySeconds: p.int('CLUSTER_RETRY_SECONDS', 3600, 0, 7 * 86400),
    prices: p.prices('PRICES_FILE'),
    kubernetes,
  };
}

function kubernetesConfig(p: Parser): KubernetesConfig {
  return {
    kubeconfig: p.raw('KUBECONFIG'),
    namespace:
      p.matching('KUBERNETES_NAMESPACE', DNS_LABEL, 'a namespace name (DNS label: a-z, 0-9, -)') ?? 'default',
    jobsPvc: p.matching('KUBERNETES_JOBS_PVC', DNS_SUBDOMAIN, 'a claim name (DNS subdomain)'),
    imagePullGraceSeconds: p.int('KUBERNETES_IMAGE_PULL_GRACE_SECONDS', 120, 0, 86400),
    unschedulableSeconds: p.int('KUBERNETES_UNSCHEDULABLE_SECONDS', 600, 0, 7 * 86400),
    imagePullSecrets: p.listOf(
      'KUBERNETES_IMAGE_PULL_SECRETS',
      DNS_SUBDOMAIN,
      'Secret names (DNS subdomains)',
    ),
    jobServiceAccount: p.matching(
      'KUBERNETES_JOB_SERVICE_ACCOUNT',
      DNS_SUBDOMAIN,
      'a service account name (DNS subdomain)',
    ),
    builtinImage: p.matching('KUBERNETES_BUILTIN_IMAGE', /^\S{1,512}$/, 'an image reference without spaces'),
    jobTtlSeconds: p.int('KUBERNETES_JOB_TTL_SECONDS', 86400, 0, 30 * 86400),
    createConcurrency: p.int('KUBERNETES_CREATE_CONCURRENCY', 8, 1, 256),
  };
}
