import { rmSync } from 'node:fs';
import { startTestApp, type TestApp } from './helpers/app';
import { startWorkerPeer } from './helpers/kubernetes-deploy';
import type { KubernetesPeer } from './helpers/kubernetes-peer';
import {
  databaseText,
  piecesOf,
  runSecretJob,
  secretModel,
  secretValues,
  setSecrets,
  sha256,
} from './helpers/secret-jobs';
import { PROGRAM } from './helpers/jobs';

/**
 * Secrets on Kubernetes (issue 32), through the whole service against the API peer: a 0600 file in
 * the job's directory on the jobs claim, its path in `<NAME>_FILE`; the Job's manifest carries the
 * path, never the value, and the value is redacted everywhere else.
 */
jest.setTimeout(120_000);

const NS = 'media';
let dir: string;
let peer: KubernetesPeer;
let t: TestApp;
let operator: string;

beforeAll(async () => {
  let jobsDir: string;
  ({ dir, jobsDir, peer } = await startWorkerPeer(NS, 'media-k8s-secrets-'));
  t = await startTestApp({
    EXECUTOR: 'kubernetes',
    KUBECONFIG: peer.writeKubeconfig(dir, NS),
    KUBERNETES_NAMESPACE: NS,
    KUBERNETES_JOBS_PVC: 'media-platform-jobs',
    JOBS_DIR: jobsDir,
  });
  operator = `Bearer ${await t.tokenFor('operator')}`;
});

afterAll(async () => {
  await t?.close();
  await peer?.stop();
  rmSync(dir, { recursive: true, force: true });
});

it('gives a job its secrets as 0600 files, with no value in the Job it creates', async () => {
  const values = secretValues();
  await setSecrets(t, operator, values);
  const modelId = await secretModel(t, operator, `node "${PROGRAM}" secrets HF_TOKEN LICENCE_KEY {args}`, {
    container: 'registry.example/tools:1',
  });
  // Every Job the peer held while the job ran, as the API server stored it.
  const manifests = new Set<string>();
  const look = setInterval(() => peer.jobs(NS).forEach((j) => manifests.add(JSON.stringify(j))), 20);
  let run: Awaited<ReturnType<typeof runSecretJob>>;
  try {
    run = await runSecretJob(t, operator, modelId, values, null);
  } finally {
    clearInterval(look);
  }
  peer.jobs(NS).forEach((j) => manifests.add(JSON.stringify(j)));

  for (const name of ['HF_TOKEN', 'LICENCE_KEY'] as const)
    expect(run.result[name]).toEqual({ from: 'file', mode: '600', sha256: sha256(values[name]) });
  expect(run.logTail).toContain('[secret HF_TOKEN]');
  const manifestText = [...manifests].join('\n');
  expect(manifestText).toContain(`"name":"HF_TOKEN_FILE"`);
  expect(manifestText).toContain(run.jobId);
  for (const { label, text } of [
    ...run.seen,
    { label: 'the Job manifest', text: manifestText },
    { label: 'the database', text: await databaseText(t.databaseUrl) },
  ])
    for (const value of [values.HF_TOKEN, ...piecesOf(values.LICENCE_KEY)])
      expect({ label, leaks: text.includes(value) }).toEqual({ label, leaks: false });
});
