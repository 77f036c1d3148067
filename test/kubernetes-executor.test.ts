import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { createLogger } from '../src/common/logger';
import { KubernetesClient } from '../src/executors/kubernetes.client';
import { LABELS } from '../src/executors/kubernetes.manifest';
import { startTestApp, type TestApp } from './helpers/app';
import { createTestDatabase } from './helpers/db';
import { alive, BUILTIN, deploy, PROGRAM, waitForJob } from './helpers/jobs';
import { startWorkerPeer } from './helpers/kubernetes-deploy';
import { KubernetesPeer, type PeerPod } from './helpers/kubernetes-peer';
import { until, uploadFile } from './helpers/media';
import { TestIssuer } from './helpers/oidc-issuer';

/**
 * EXECUTOR=kubernetes through the whole service (REST, GraphQL, the worker, the database) against
 * the Kubernetes API peer, which enforces the worker's Role from deploy/kubernetes/ and runs each
 * pod's command as a local process over the shared jobs directory.
 */

jest.setTimeout(120_000);

const NS = 'media';
const IMAGE = 'registry.example/tools:1';

let dir: string;
let jobsDir: string;
let peer: KubernetesPeer;
let issuer: TestIssuer;
let databaseUrl: string;
let env: Record<string, string>;
let t: TestApp;
let alice: string;
let operator: string;
const warnings: { msg: string; jobId?: string; infrastructure?: boolean }[] = [];

async function startApp(): Promise<TestApp> {
  const log = createLogger(process.env.E2E_LOG ?? 'error', { apiKeyHeader: 'x-service-key' });
  const warn = log.warn.bind(log);
  log.warn = ((obj: unknown, msg?: string) => {
    if (typeof obj === 'object' && obj) warnings.push({ ...(obj as object), msg: msg ?? '' });
    return warn(obj as object, msg);
  }) as typeof log.warn;
  return startTestApp(env, { databaseUrl, issuer, log });
}

beforeAll(async () => {
  ({ dir, jobsDir, peer } = await startWorkerPeer(NS, 'media-k8s-e2e-'));
  const machineTypes = path.join(dir, 'machine-types.yaml');
  writeFileSync(
    machineTypes,
    [
      'machine_types:',
      '  cpu:',
      '    kubernetes: { resources: { requests: { cpu: 500m, memory: 1Gi }, limits: { memory: 2Gi } } }',
      '  nowhere:',
      '    kubernetes: { nodeSelector: { pool: gpu-pool-that-does-not-exist } }',
    ].join('\n'),
  );
  issuer = await TestIssuer.start();
  databaseUrl = await createTestDatabase();
  // A secret in the service's own environment must never reach a job's.
  process.env.MEDIA_TEST_CANARY_SECRET = 'canary';
  env = {
    EXECUTOR: 'kubernetes',
    KUBECONFIG: peer.writeKubeconfig(dir, NS),
    KUBERNETES_NAMESPACE: NS,
    KUBERNETES_JOBS_PVC: 'media-platform-jobs',
    KUBERNETES_BUILTIN_IMAGE: 'media-platform:test',
    KUBERNETES_IMAGE_PULL_GRACE_SECONDS: '1',
    KUBERNETES_UNSCHEDULABLE_SECONDS: '1',
    MACHINE_TYPES_FILE: machineTypes,
    JOBS_DIR: jobsDir,
    ADMIN_SUBJECTS: 'operator',
  };
  t = await startApp();
  alice = `Bearer ${await t.tokenFor('alice')}`;
  operator = `Bearer ${await t.tokenFor('operator')}`;
});

afterAll(async () => {
  await t?.close();
  await peer?.stop();
  await issuer?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A model running the fixture program in `mode` in IMAGE; answers its id. */
async function programModel(mode: string, more: Record<string, unknown> = {}): Promise<string> {
  const res = await t.gql(
    'mutation ($input: CreateModelInput!) { createModel(input: $input) { id } }',
    {
      input: {
        name: `program ${mode}`,
        container: IMAGE,
        command: `node "${PROGRAM}" ${mode} {args}`,
        args: [],
        machineType: 'cpu',
        ...more,
      },
    },
    operator,
  );
  if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
  return res.body.data.createModel.id;
}

async function rest(jobId: string, auth = alice) {
  return t.http().get(`/api/v1/jobs/${jobId}`).set('authorization', auth);
}

function peerJobOf(jobId: string) {
  return peer.jobs(NS).filter((j) => j.metadata.labels?.[LABELS.jobId] === jobId);
}

/** Someone else with access to the namespace (kubectl). */
function outsider(): KubernetesClient {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(peer.kubeconfig(NS));
  return new KubernetesClient({
    kubeConfig,
    namespace: NS,
    log: createLogger('error', { apiKeyHeader: 'x' }),
  });
}

/** The pod of a job, once its container runs. */
function runningPod(jobId: string): Promise<PeerPod> {
  return peer.waitFor(
    () =>
      peer.pods(NS).find((p) => p.metadata.labels?.[LABELS.jobId] === jobId && p.status.phase === 'Running'),
    `a running pod of job ${jobId}`,
  );
}

describe('a job on Kubernetes', () => {
  it('runs the README demo deployment to a result, as one labelled Job on the shared claim', async () => {
    const media = (await uploadFile(t, alice, Buffer.from('one two three\nfour\n'), 'w.txt')).body.media.id;
    const { jobId, targetAssetId } = await deploy(t, alice, BUILTIN.wordcount, { text: media });
    const job = await waitForJob(t, alice, jobId);
    expect(job).toMatchObject({ status: 'SUCCEEDED', result: { lines: 2, words: 4, characters: 19 } });
    const body = (await rest(jobId)).body;
    expect(body).toMatchObject({
      executor: 'kubernetes',
      external_id: `media-job-${jobId}`,
      nodes: ['peer-node-1'],
      exit_code: 0,
    });
    const served = await t.http().get(new URL(job.resultUrls[0]).pathname);
    expect(JSON.parse(served.text)).toEqual({ lines: 2, words: 4, characters: 19 });
    expect(job.resultUrls).toEqual([expect.stringContaining(`/media/${targetAssetId}.json`)]);
    const [k8sJob] = peerJobOf(jobId);
    expect(peerJobOf(jobId)).toHaveLength(1);
    const alicesId = k8sJob.metadata.labels![LABELS.ownerId];
    expect(alicesId).toMatch(/^[0-9a-f-]{36}$/);
    const pod = k8sJob.spec.template.spec;
    expect(pod.containers[0].image).toBe('media-platform:test');
    expect(pod.containers[0].volumeMounts).toEqual([
      { name: 'jobs', mountPath: path.join(jobsDir, jobId), subPath: jobId },
    ]);
    expect(pod.containers[0].resources).toEqual({
      requests: { cpu: '500m', memory: '1Gi' },
      limits: { memory: '2Gi' },
    });
    // The input was staged into the job's directory on the claim, which is gone afterwards.
    expect(job.command.at(-1)).toMatch(/^inputs\//);
    await until(
      async () => readdirSync(jobsDir),
      (d) => !d.includes(jobId),
    );
  });

  it('streams the pod log into the job and stores its output files; the environment is the minimal one', async () => {
    const { jobId } = await deploy(t, alice, await programModel('outputs'), {});
    const job = await waitForJob(t, alice, jobId);
    expect(job.status).toBe('SUCCEEDED');
    const out = (job.result ?? JSON.parse(job.logTail.trim().split('\n').at(-1)!)) as { env: string[] };
    expect(out.env).toEqual(expect.arrayContaining(['HOME', 'LANG', 'MEDIA_JOB_ID', 'OUTPUT_DIR', 'TMPDIR']));
    expect(out.env).not.toContain('MEDIA_TEST_CANARY_SECRET');
    expect(out.env).not.toContain('DATABASE_URL');
    const body = (await rest(jobId)).body;
    // The symlink to /etc/passwd is refused; the two regular files are kept.
    expect(body.output.files.map((f: { name: string }) => f.name).sort()).toEqual([
      'a-first.txt',
      'sub/second.csv',
    ]);
    const first = body.output.files.find((f: { name: string }) => f.name === 'a-first.txt');
    expect((await t.http().get(new URL(first.url).pathname)).text).toBe('first output\n');
  });

  it('names a failing exit code with what the program printed', async () => {
    const { jobId } = await deploy(t, alice, await programModel('fail 3'), {});
    const job = await waitForJob(t, alice, jobId);
    expect(job).toMatchObject({ status: 'FAILED', exitCode: 3, error: 'the program exited with code 3' });
    expect(job.logTail).toContain('something went wrong');
  });
});

describe('failures in words', () => {
  it('fails an image that cannot be pulled after the grace period, naming the image, and deletes its Job', async () => {
    peer.makeUnpullable('registry.example/missing:1');
    const { jobId } = await deploy(
      t,
      alice,
      await programModel('argv', { container: 'registry.example/missing:1' }),
      {},
    );
    const job = await waitForJob(t, alice, jobId);
    expect(job.status).toBe('FAILED');
    expect(job.error).toMatch(
      /(ErrImagePull|ImagePullBackOff): cannot pull the image "registry.example\/missing:1"/,
    );
    await peer.waitFor(() => peerJobOf(jobId).length === 0, 'the Job deleted');
  });

  it('names an OOM kill', async () => {
    const { jobId } = await deploy(t, alice, await programModel('idle'), {});
    peer.oomKill(await runningPod(jobId));
    const job = await waitForJob(t, alice, jobId);
    expect(job.status).toBe('FAILED');
    expect(job.error).toMatch(/^OOMKilled: .*2Gi/);
  });

  it('names a deadline: the model timeout is the Job activeDeadlineSeconds', async () => {
    const { jobId } = await deploy(t, alice, await programModel('idle', { timeoutSeconds: 2 }), {});
    const pod = await runningPod(jobId);
    expect(peerJobOf(jobId)[0].spec.activeDeadlineSeconds).toBe(2);
    const job = await waitForJob(t, alice, jobId);
    expect(job.status).toBe('FAILED');
    expect(job.error).toMatch(/DeadlineExceeded/);
    const pid = peer.processOf(pod)?.pid;
    expect(pid === undefined || !alive(pid)).toBe(true);
  });

  it('marks an evicted pod as a failure of the infrastructure', async () => {
    const { jobId } = await deploy(t, alice, await programModel('idle'), {});
    peer.evict(await runningPod(jobId));
    const job = await waitForJob(t, alice, jobId);
    expect(job.status).toBe('FAILED');
    expect(job.error).toMatch(/^Evicted: The node was low on resource: memory/);
    expect(warnings).toContainEqual(
      expect.objectContaining({
        jobId,
        infrastructure: true,
        msg: 'a job failed because of the infrastructure',
      }),
    );
  });

  it('fails a job no node can take after the unschedulable time, with the scheduler message', async () => {
    const { jobId } = await deploy(t, alice, await programModel('argv', { machineType: 'nowhere' }), {});
    const job = await waitForJob(t, alice, jobId);
    expect(job.status).toBe('FAILED');
    expect(job.error).toMatch(/didn't match Pod's node affinity\/selector/);
    await peer.waitFor(() => peerJobOf(jobId).length === 0, 'the Job deleted');
  });
});

describe('cancel, take-over and tenancy', () => {
  it('cancels by deleting the Job with its pods', async () => {
    const { jobId } = await deploy(t, alice, await programModel('idle'), {});
    const pod = await runningPod(jobId);
    const pid = peer.processOf(pod)!.pid!;
    const canceled = await t.http().post(`/api/v1/jobs/${jobId}/cancel`).set('authorization', alice);
    expect(canceled.body.status).toBe('canceled');
    await peer.waitFor(() => peerJobOf(jobId).length === 0, 'the Job deleted');
    const deletes = peer.calls.filter((c) => c.verb === 'delete' && c.resource === 'jobs');
    expect(deletes.at(-1)!.query.propagationPolicy).toBe('Background');
    expect(
      await until(
        async () => alive(pid),
        (a) => !a,
      ),
    ).toBe(false);
    expect((await waitForJob(t, alice, jobId)).status).toBe('CANCELED');
  });

  it('a restarted worker takes the running Job over without creating a second one', async () => {
    const flag = path.join(dir, `flag-${Date.now()}`);
    const { jobId } = await deploy(t, alice, await programModel(`until ${flag}`), {});
    await runningPod(jobId);
    await waitForJob(t, alice, jobId, (j) => j.status === 'RUNNING' && j.logTail.includes('tick 2'));
    await t.close(); // a detached executor leaves its Jobs running
    const callsBefore = peer.calls.length;
    expect(peerJobOf(jobId)).toHaveLength(1);
    t = await startApp();
    await waitForJob(t, alice, jobId, (j) => j.logTail.includes('tick 3'));
    writeFileSync(flag, '');
    const job = await waitForJob(t, alice, jobId);
    expect(job.status).toBe('SUCCEEDED');
    expect(readFileSync(`${flag}.runs`, 'utf8').trim().split('\n')).toHaveLength(1);
    // Found by its label (a list), never created again.
    const after = peer.calls.slice(callsBefore);
    expect(after.filter((c) => c.verb === 'create')).toEqual([]);
    expect(after.some((c) => c.verb === 'list' && c.query.labelSelector?.includes(jobId))).toBe(true);
    expect(peerJobOf(jobId)).toHaveLength(1);
    const body = (await rest(jobId)).body;
    expect(body.output.files.map((f: { name: string }) => f.name)).toEqual(['done.txt']);
    expect(existsSync(flag)).toBe(true);
  });

  it('takes over a Job that finished while no worker ran, to its result', async () => {
    const flag = path.join(dir, `flag-${Date.now()}`);
    const { jobId } = await deploy(t, alice, await programModel(`until ${flag}`), {});
    await runningPod(jobId);
    await waitForJob(t, alice, jobId, (j) => j.status === 'RUNNING');
    await t.close();
    writeFileSync(flag, '');
    await peer.waitFor(
      () => peerJobOf(jobId)[0]?.status.conditions?.some((c) => c.type === 'Complete'),
      'the Job complete',
    );
    t = await startApp();
    const job = await waitForJob(t, alice, jobId);
    expect(job.status).toBe('SUCCEEDED');
    expect((await rest(jobId)).body.output.files.map((f: { name: string }) => f.name)).toEqual(['done.txt']);
  });

  it('fails a job whose Job was deleted behind the service’s back: lost, an infrastructure failure', async () => {
    const { jobId } = await deploy(t, alice, await programModel('idle'), {});
    await runningPod(jobId);
    await waitForJob(t, alice, jobId, (j) => j.status === 'RUNNING');
    expect(await outsider().deleteJob(`media-job-${jobId}`)).toBe(true);
    const job = await waitForJob(t, alice, jobId);
    expect(job).toMatchObject({
      status: 'FAILED',
      error: 'the Kubernetes Job was deleted before it finished',
    });
    expect(warnings).toContainEqual(expect.objectContaining({ jobId, infrastructure: true }));
  });

  it('fails as lost a job whose Job vanished while no worker ran', async () => {
    const { jobId } = await deploy(t, alice, await programModel('idle'), {});
    await runningPod(jobId);
    await waitForJob(t, alice, jobId, (j) => j.status === 'RUNNING');
    await t.close();
    await outsider().deleteJob(`media-job-${jobId}`);
    t = await startApp();
    const job = await waitForJob(t, alice, jobId);
    expect(job.status).toBe('FAILED');
    expect(job.error).toBe(
      `the Kubernetes Job media-job-${jobId} is gone: deleted, removed after its TTL, or never created`,
    );
  });

  it('creates one Job when the reply to its creation is lost, and retries a 429', async () => {
    peer.failNext({ verb: 'create', resource: 'jobs' }, 500, { afterApplying: true });
    peer.failNext({ verb: 'list', resource: 'jobs' }, 429, { retryAfter: 1 });
    const { jobId } = await deploy(t, alice, await programModel('argv'), {});
    expect((await waitForJob(t, alice, jobId)).status).toBe('SUCCEEDED');
    expect(peerJobOf(jobId)).toHaveLength(1);
  });

  it('answers 404 for another owner’s job and leaves it running', async () => {
    const { jobId } = await deploy(t, alice, await programModel('idle'), {});
    await runningPod(jobId);
    const bob = `Bearer ${await t.tokenFor('bob')}`;
    expect((await rest(jobId, bob)).status).toBe(404);
    expect((await t.http().post(`/api/v1/jobs/${jobId}/cancel`).set('authorization', bob)).status).toBe(404);
    expect(peerJobOf(jobId)).toHaveLength(1);
    await t.http().post(`/api/v1/jobs/${jobId}/cancel`).set('authorization', alice);
    await peer.waitFor(() => peerJobOf(jobId).length === 0, 'the Job deleted');
  });
});

describe('an API that does not answer', () => {
  it('keeps a new job starting, saying why, through an outage longer than the client retries, then creates its Job once; it ended meanwhile, and ends through running', async () => {
    // The Job is created but the reply is lost; then reading it back answers 503 through all of
    // the client's retries (about 30 s): the submission is tried again later, not failed.
    peer.failNext({ verb: 'create', resource: 'jobs' }, 503, { afterApplying: true });
    peer.failNext({ verb: 'get', resource: 'jobs' }, 503, { times: 8 });
    const { jobId } = await deploy(t, alice, await programModel('argv'), {});
    const waiting = (
      await until(
        () => rest(jobId),
        (r) => r.body.status !== 'queued' && (r.body.status !== 'starting' || !!r.body.pending_reason),
        90_000,
      )
    ).body;
    expect(waiting.status).toBe('starting');
    expect(waiting.pending_reason).toMatch(/^Kubernetes API: get jobs\.batch: 503 .*\(trying again\)$/);
    const job = await waitForJob(t, alice, jobId);
    expect(job.status).toBe('SUCCEEDED');
    const body = (await rest(jobId)).body;
    expect(body.pending_reason).toBeNull();
    expect(peerJobOf(jobId)).toHaveLength(1);
    // Its Job ran and ended while the job was still `starting`: it ends through `running`.
    const completed = peerJobOf(jobId)[0].status.completionTime!;
    expect(Date.parse(body.started_at)).toBeGreaterThan(Date.parse(completed));
    const res = await t.gql('query ($id: ID!) { job(id: $id) { transitions { to } } }', { id: jobId }, alice);
    expect(res.body.data.job.transitions.map((x: { to: string }) => x.to)).toEqual([
      'QUEUED',
      'STARTING',
      'RUNNING',
      'SUCCEEDED',
    ]);
  });

  it('deletes the Job of a job canceled while deletes answer 503 through all the client retries, once they succeed', async () => {
    const { jobId } = await deploy(t, alice, await programModel('idle'), {});
    await runningPod(jobId);
    peer.failNext({ verb: 'delete', resource: 'jobs' }, 503, { times: 9 });
    const canceled = await t.http().post(`/api/v1/jobs/${jobId}/cancel`).set('authorization', alice);
    expect(canceled.body.status).toBe('canceled');
    await peer.waitFor(() => peerJobOf(jobId).length === 0, 'the Job deleted', 90_000);
  });
});
