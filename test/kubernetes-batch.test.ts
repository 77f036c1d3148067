import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { createLogger } from '../src/common/logger';
import type { Executor, JobExit, JobObserver, JobSpec } from '../src/executors/executor.port';
import { KubernetesClient } from '../src/executors/kubernetes.client';
import { KubernetesExecutor } from '../src/executors/kubernetes.executor';
import { LABELS } from '../src/executors/kubernetes.manifest';
import { startWorkerPeer } from './helpers/kubernetes-deploy';
import type { KubernetesPeer } from './helpers/kubernetes-peer';

/**
 * A batch's jobs on Kubernetes (docs/executors-kubernetes.md, "Batches"): submitMany makes one Job
 * per job, at most KUBERNETES_CREATE_CONCURRENCY creations in flight, against the API peer (the
 * worker's Role enforced), which runs each pod's command as a local process.
 */

jest.setTimeout(120_000);

const NS = 'media';
const PROGRAM = path.join(__dirname, 'fixtures', 'job-program.js');

let dir: string;
let jobsDir: string;
let peer: KubernetesPeer;
const executors: KubernetesExecutor[] = [];

beforeAll(async () => {
  ({ dir, jobsDir, peer } = await startWorkerPeer(NS, 'media-k8s-batch-'));
});
afterAll(async () => {
  for (const e of executors) await e.close();
  await peer?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function executor(createConcurrency: number): KubernetesExecutor {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(peer.kubeconfig(NS));
  const log = createLogger('error');
  const e = new KubernetesExecutor({
    client: new KubernetesClient({ kubeConfig, namespace: NS, log }),
    job: {
      namespace: NS,
      jobsPvc: 'media-platform-jobs',
      jobsDir,
      ttlSecondsAfterFinished: 3600,
      imagePullSecrets: [],
      serviceAccount: undefined,
      builtinImage: undefined,
      programs: {},
    },
    tracker: { imagePullGraceSeconds: 60, unschedulableSeconds: 60 },
    machineTypes: null,
    log,
    createConcurrency,
  });
  executors.push(e);
  return e;
}

function specOf(argv: string[]): JobSpec {
  const jobId = randomUUID();
  const workDir = path.join(jobsDir, jobId);
  mkdirSync(path.join(workDir, 'output'), { recursive: true });
  return {
    jobId,
    owner: { type: 'user', id: '3f0c9a52-8c1e-4d5b-9a7e-2b6d4c8e1f00' },
    argv,
    env: {},
    container: 'registry.example/tools:1',
    machineType: 'cpu',
    machineCount: 1,
    timeoutSeconds: 600,
    inputs: [],
    workDir,
    outputDir: path.join(workDir, 'output'),
  };
}

class Followed implements JobObserver {
  readonly lines: string[] = [];
  readonly ended$: Promise<JobExit>;
  private resolve!: (e: JobExit) => void;
  constructor() {
    this.ended$ = new Promise((r) => (this.resolve = r));
  }
  pending(): void {}
  running(): void {}
  line(_stream: string, line: string): void {
    this.lines.push(line);
  }
  ended(exit: JobExit): void {
    this.resolve(exit);
  }
}

/** Item i prints its arguments; the fourth fails. */
const argvOf = (i: number) =>
  i === 3 ? [process.execPath, PROGRAM, 'fail', '4'] : [process.execPath, PROGRAM, 'argv', `item ${i}`];

describe('submitMany on Kubernetes', () => {
  it.each([3, 8])(
    'creates one Job per job, never more than %i creations in flight, each followed to its own end',
    async (concurrency) => {
      peer.slowCreates(150);
      try {
        const e = executor(concurrency);
        const specs = Array.from({ length: 16 }, (_, i) => specOf(argvOf(i)));
        const observers = specs.map(() => new Followed());
        const names = await e.submitMany(specs, observers);
        // The peer had as many creations at once as allowed (16 jobs, 150 ms each), never more.
        expect(peer.peakCreatesInFlight).toBe(concurrency);
        specs.forEach((spec, i) => {
          const jobs = peer.jobs(NS).filter((j) => j.metadata.labels?.[LABELS.jobId] === spec.jobId);
          expect(jobs.map((j) => j.metadata.name)).toEqual([names[i]]);
        });
        const exits = await Promise.all(observers.map((o) => o.ended$));
        exits.forEach((exit, i) => {
          if (i === 3) expect(exit.exitCode).toBe(4);
          else {
            expect(exit).toMatchObject({ exitCode: 0, reason: null });
            expect(observers[i].lines).toContain(JSON.stringify([`item ${i}`]));
          }
        });
      } finally {
        peer.slowCreates(0);
      }
    },
  );

  it('a submission tried again creates only the Jobs the first one did not', async () => {
    const e: Required<Pick<Executor, 'submitMany'>> = executor(4);
    const specs = Array.from({ length: 6 }, (_, i) => specOf(argvOf(i === 3 ? 0 : i)));
    const first = await e.submitMany(
      specs.slice(0, 4),
      specs.slice(0, 4).map(() => new Followed()),
    );
    const creates = () => peer.calls.filter((c) => c.verb === 'create' && c.status === 201).length;
    const before = creates();
    const observers = specs.map(() => new Followed());
    const again = await e.submitMany(specs, observers, true);
    expect(again.slice(0, 4)).toEqual(first);
    expect(creates() - before).toBe(2);
    await Promise.all(observers.map((o) => o.ended$));
  });
});
