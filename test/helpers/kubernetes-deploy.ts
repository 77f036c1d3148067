import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import { KubernetesPeer, type PolicyRule } from './kubernetes-peer';

export const DEPLOY_DIR = path.resolve(__dirname, '..', '..', 'deploy', 'kubernetes');

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; [k: string]: unknown };
  [k: string]: unknown;
}

/** Every object of the YAML files in deploy/kubernetes/ (its kustomization aside), with its file. */
export function deployManifests(): (Manifest & { file: string })[] {
  const out: (Manifest & { file: string })[] = [];
  const files = readdirSync(DEPLOY_DIR).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
  for (const file of files.sort()) {
    for (const doc of parseAllDocuments(readFileSync(path.join(DEPLOY_DIR, file), 'utf8'))) {
      if (doc.errors.length) throw new Error(`${file}: ${doc.errors[0].message}`);
      out.push({ ...(doc.toJS() as Manifest), file });
    }
  }
  return out;
}

/** The worker's Role rules as deploy/kubernetes/role.yaml grants them. */
export function workerRoleRules(): PolicyRule[] {
  const role = deployManifests().find(
    (m) => m.kind === 'Role' && m.metadata.name === 'media-platform-worker',
  );
  if (!role) throw new Error('deploy/kubernetes has no Role media-platform-worker');
  return role.rules as PolicyRule[];
}

/**
 * A directory with `jobs/` (JOBS_DIR) and the API peer as the worker meets it in the cluster:
 * the worker's Role in `namespace`, its service account, the jobs claim over `jobs/`.
 */
export async function startWorkerPeer(
  namespace: string,
  prefix: string,
): Promise<{ dir: string; jobsDir: string; peer: KubernetesPeer }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  const jobsDir = path.join(dir, 'jobs');
  mkdirSync(jobsDir);
  const peer = await KubernetesPeer.start({
    claims: { 'media-platform-jobs': jobsDir },
    rules: workerRoleRules(),
    rbacNamespace: namespace,
    serviceAccount: 'media-platform-worker',
    imagePullRetryMs: 100,
  });
  return { dir, jobsDir, peer };
}
