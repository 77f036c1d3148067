import { accessSync, constants, existsSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config';
import type { Logger } from '../common/logger';
import type { Executor } from './executor.port';
import { LocalExecutor } from './local.executor';
import { SlurmExecutor } from './slurm.executor';

const compiled = path.extname(__filename) === '.js';

/**
 * Programs the service provides itself, by the name model commands use. The demo program runs
 * the way the service runs: compiled JavaScript, or its TypeScript source through swc (tests,
 * development from source).
 */
export function builtinPrograms(): Record<string, string[]> {
  return { 'media-demo': nodeProgram(path.join('demo-models', 'media-demo')) };
}

/** How to run one of the service's own programs (`src/<name>`): compiled, or from source via swc. */
function nodeProgram(name: string): string[] {
  const script = path.join(__dirname, '..', `${name}${compiled ? '.js' : '.ts'}`);
  return compiled
    ? [process.execPath, script]
    : [process.execPath, '-r', require.resolve('@swc-node/register'), script];
}

/**
 * The Slurm batch script: a file of the sources (the compiler does not copy it), found beside
 * this file in `src/executors/` whether the service runs from `dist/` or from source.
 */
export function slurmJobScript(name: 'slurm.job.sh' | 'slurm.array.sh' = 'slurm.job.sh'): string {
  const script = compiled
    ? path.resolve(__dirname, '..', '..', '..', 'src', 'executors', name)
    : path.join(__dirname, name);
  if (!existsSync(script)) throw new Error(`the Slurm batch script ${script} is missing`);
  return script;
}

/** The executor the configuration names. */
export function createExecutor(config: Config, log: Logger): Executor {
  if (config.executor === 'slurm')
    return new SlurmExecutor({
      path: config.localExecutorPath,
      slurmConf: config.slurmConf,
      pollSeconds: config.slurmPollSeconds,
      runtime: config.slurmContainerRuntime,
      machineTypes: config.machineTypes,
      programs: builtinPrograms(),
      script: slurmJobScript(),
      arrayScript: slurmJobScript('slurm.array.sh'),
      arrayTaskLimit: config.slurmArrayTaskLimit,
      governance: {
        accounts: config.governance.slurmAccounts,
        defaultAccount: config.governance.slurmDefaultAccount,
        qos: config.governance.slurmQos,
      },
      log,
    });
  if (config.executor === 'kubernetes') {
    // Loaded only when chosen: @kubernetes/client-node alone holds about 25 MiB of heap, which
    // every other process (API, local or Slurm workers) would carry for nothing.
    /* eslint-disable @typescript-eslint/no-require-imports */
    const { KubernetesClient, loadKubeConfig } =
      require('./kubernetes.client') as typeof import('./kubernetes.client');
    const { KubernetesExecutor } = require('./kubernetes.executor') as typeof import('./kubernetes.executor');
    /* eslint-enable @typescript-eslint/no-require-imports */
    const k = config.kubernetes;
    return new KubernetesExecutor({
      client: new KubernetesClient({ kubeConfig: loadKubeConfig(k.kubeconfig), namespace: k.namespace, log }),
      job: {
        namespace: k.namespace,
        jobsPvc: k.jobsPvc!,
        jobsDir: config.jobsDir,
        ttlSecondsAfterFinished: k.jobTtlSeconds,
        imagePullSecrets: k.imagePullSecrets,
        serviceAccount: k.jobServiceAccount,
        builtinImage: k.builtinImage,
        programs: builtinPrograms(),
        priorityClasses: config.governance.kubernetesPriorityClasses,
        kueueQueues: config.governance.kueueQueues,
      },
      createConcurrency: k.createConcurrency,
      tracker: {
        imagePullGraceSeconds: k.imagePullGraceSeconds,
        unschedulableSeconds: k.unschedulableSeconds,
      },
      machineTypes: config.machineTypes,
      log,
    });
  }
  const prlimit = findProgram('prlimit', config.localExecutorPath);
  if (!prlimit)
    log.warn(
      'prlimit (util-linux) is not installed: local jobs get no per-process limits; their memory and processes are still watched',
    );
  return new LocalExecutor({
    concurrency: config.localExecutorConcurrency,
    path: config.localExecutorPath,
    limits: {
      memoryBytes: config.localExecutorMemoryMb * 1024 * 1024,
      openFiles: config.localExecutorMaxOpenFiles,
      processes: config.localExecutorMaxProcesses,
      prlimit,
    },
    programs: builtinPrograms(),
    launcher: nodeProgram(path.join('executors', 'launcher')),
    log,
  });
}

/** An executable named `name` in the directories of `pathList` (also /usr/bin), or null. */
function findProgram(name: string, pathList: string): string | null {
  for (const dir of [...pathList.split(':'), '/usr/bin']) {
    const file = path.join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return null;
}
