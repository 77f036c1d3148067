import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { LABELS } from '../src/executors/kubernetes.manifest';
import { startTestApp, type TestApp } from './helpers/app';
import { PROGRAM } from './helpers/jobs';
import { startWorkerPeer } from './helpers/kubernetes-deploy';
import type { KubernetesPeer } from './helpers/kubernetes-peer';
import { until } from './helpers/media';

/**
 * A batch through the whole service on Kubernetes (docs/batches.md, "Executors"): REST creates it,
 * the runner dispatches its chunk with one `dispatch_batch` task and KubernetesExecutor.submitMany
 * creates one Job per item, at most KUBERNETES_CREATE_CONCURRENCY at once, against the API peer
 * (the worker's Role enforced; each pod's command runs as a local process).
 */

jest.setTimeout(120_000);

const NS = 'media';
const ITEMS = 10;
const CREATE_CONCURRENCY = 3;

let dir: string;
let peer: KubernetesPeer;
let t: TestApp;
let alice: string;
let operator: string;

beforeAll(async () => {
  let jobsDir: string;
  ({ dir, jobsDir, peer } = await startWorkerPeer(NS, 'media-k8s-batches-'));
  const machineTypes = path.join(dir, 'machine-types.yaml');
  writeFileSync(
    machineTypes,
    ['machine_types:', '  cpu:', '    kubernetes: { resources: { requests: { cpu: 100m } } }'].join('\n'),
  );
  t = await startTestApp({
    EXECUTOR: 'kubernetes',
    KUBECONFIG: peer.writeKubeconfig(dir, NS),
    KUBERNETES_NAMESPACE: NS,
    KUBERNETES_JOBS_PVC: 'media-platform-jobs',
    KUBERNETES_CREATE_CONCURRENCY: String(CREATE_CONCURRENCY),
    MACHINE_TYPES_FILE: machineTypes,
    JOBS_DIR: jobsDir,
    ADMIN_SUBJECTS: 'operator',
  });
  alice = `Bearer ${await t.tokenFor('alice')}`;
  operator = `Bearer ${await t.tokenFor('operator')}`;
});

afterAll(async () => {
  await t?.close();
  await peer?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const api = (auth: string) => ({
  post: (url: string, body?: unknown) =>
    t
      .http()
      .post(url)
      .set('authorization', auth)
      .send(body as object),
  get: (url: string) => t.http().get(url).set('authorization', auth),
});

interface RestBatch {
  status: string;
  counts: Record<'queued' | 'starting' | 'running' | 'succeeded' | 'failed' | 'canceled', number>;
}

describe('a batch on Kubernetes, through the service', () => {
  it('runs one Job per item, never more than KUBERNETES_CREATE_CONCURRENCY creations in flight', async () => {
    const model = await api(operator).post('/api/v1/models', {
      name: 'program argv',
      container: 'registry.example/tools:1',
      command: `node "${PROGRAM}" argv {args}`,
      args: { n: { type: 'int', format: ':value' } },
      machine_type: 'cpu',
    });
    expect(model.status).toBe(201);
    // Each creation takes 150 ms at the peer, so that the worker's concurrent ones overlap.
    peer.slowCreates(150);
    const createsBefore = peer.calls.filter((c) => c.verb === 'create' && c.resource === 'jobs').length;
    const res = await api(alice).post('/api/v1/batches', {
      name: 'k8s batch',
      model_id: model.body.id,
      inputs: { items: Array.from({ length: ITEMS }, (_, n) => ({ n })) },
    });
    expect(res.status).toBe(201);
    const id = res.body.id as string;
    const done = await until(
      async () => (await api(alice).get(`/api/v1/batches/${id}`)).body as RestBatch,
      (b) => b.status === 'completed',
      90_000,
    );
    const peak = peer.peakCreatesInFlight;
    peer.slowCreates(0); // (which also zeroes the peak)
    expect(done.status).toBe('completed');
    expect(done.counts).toMatchObject({ succeeded: ITEMS, failed: 0, canceled: 0 });

    const jobs = (await api(alice).get(`/api/v1/batches/${id}/jobs?limit=100`)).body as {
      id: string;
      external_id: string;
      executor: string;
    }[];
    expect(jobs).toHaveLength(ITEMS);
    for (const j of jobs)
      expect(j).toMatchObject({ executor: 'kubernetes', external_id: `media-job-${j.id}` });
    // The peer saw exactly one Job per item, named as the job's external id.
    const ours = new Set(jobs.map((j) => j.id));
    const peerJobs = peer.jobs(NS).filter((j) => ours.has(j.metadata.labels?.[LABELS.jobId] ?? ''));
    expect(peerJobs.map((j) => j.metadata.name).sort()).toEqual(jobs.map((j) => j.external_id).sort());
    const creates = peer.calls
      .filter((c) => c.verb === 'create' && c.resource === 'jobs')
      .slice(createsBefore);
    expect(creates).toHaveLength(ITEMS);
    // Submitted together by submitMany: as many creations at once as allowed, never more (jobs
    // submitted one by one, each by its own dispatch, would not be bounded by the setting).
    expect(peak).toBe(CREATE_CONCURRENCY);
  });
});
