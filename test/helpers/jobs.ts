import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { TestApp } from './app';

/** The program the tests run as jobs (plain JavaScript; its modes are listed in the file). */
export const PROGRAM = path.join(__dirname, '..', 'fixtures', 'job-program.js');

export const BUILTIN = {
  thumbnail: 'ae6f879c-3158-422d-8c51-cc68c7a2bb17',
  ocr: '4ff2afc2-2a33-4c29-afd5-025d011a58d9',
  wordcount: '24f808bb-acac-408c-af81-0345d5e0a78d',
};

export const JOB_FIELDS =
  'id status exitCode error logTail result resultUrls externalId runSeconds queueSeconds startedAt finishedAt command';

export interface JobView {
  id: string;
  status: string;
  exitCode: number | null;
  error: string | null;
  logTail: string;
  result: unknown;
  resultUrls: string[];
  externalId: string | null;
  runSeconds: number | null;
  queueSeconds: number | null;
  startedAt: string | null;
  finishedAt: string | null;
  command: string[];
}

/** Creates a deployment over GraphQL; answers the deployment id and its job id. */
export async function deploy(
  t: TestApp,
  auth: string,
  modelId: string,
  args: Record<string, unknown>,
  name = 'test run',
): Promise<{ id: string; jobId: string; targetAssetId: string }> {
  const res = await t.gql(
    'mutation ($input: CreateDeploymentInput!) { createDeployment(input: $input) { id targetAssetId job { id } } }',
    { input: { name, modelId, args } },
    auth,
  );
  if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
  const d = res.body.data.createDeployment;
  return { id: d.id, jobId: d.job.id, targetAssetId: d.targetAssetId };
}

export async function jobOf(t: TestApp, auth: string, id: string): Promise<JobView> {
  const res = await t.gql(`query ($id: ID!) { job(id: $id) { ${JOB_FIELDS} } }`, { id }, auth);
  if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
  return res.body.data.job;
}

/** Polls a job until `done` says so (by default: a terminal state). */
export async function waitForJob(
  t: TestApp,
  auth: string,
  id: string,
  done: (j: JobView) => boolean = (j) => ['succeeded', 'failed', 'canceled'].includes(j.status.toLowerCase()),
  timeoutMs = 60000,
): Promise<JobView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = await jobOf(t, auth, id);
    if (done(job)) return job;
    if (Date.now() > deadline) throw new Error(`job ${id} still ${job.status}: ${JSON.stringify(job)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Whether a process exists (signal 0 only checks). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A model running the fixture program (`test/fixtures/job-program.js`) in `mode`, over REST. */
export async function programModel(
  t: TestApp,
  owner: string,
  mode: string,
  more: Record<string, unknown> = {},
): Promise<string> {
  const res = await t
    .http()
    .post('/api/v1/models')
    .set('authorization', owner)
    .send({
      name: `program ${mode}`,
      container: 'local',
      command: `node "${PROGRAM}" ${mode} {args}`,
      args: {},
      ...more,
    });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}

/** The pid of the launcher that started a running local job's process. */
export function launcherOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** A job as REST shows it, as far as the tests of spawned services read it. */
export interface RestJob {
  status: string;
  external_id: string | null;
  error: string | null;
  pending_reason: string | null;
  log_tail: string;
  result_urls: string[];
  output: { files: { name: string; url: string }[]; result: unknown };
}

/** REST calls to a service (a spawned process) on `port`. */
export function restApi(port: number, auth: string) {
  const call = async (method: string, url: string, body?: unknown) => {
    const res = await fetch(`http://127.0.0.1:${port}${url}`, {
      method,
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  return {
    call,
    /** A model running the fixture program in `mode`, then a deployment of it; answers the job id. */
    async run(mode: string): Promise<string> {
      const model = await call('POST', '/api/v1/models', {
        name: mode,
        container: 'local',
        command: `node "${PROGRAM}" ${mode} {args}`,
        args: {},
      });
      const deployment = await call('POST', '/api/v1/deployments', {
        name: mode,
        model_id: model.body.id,
        args: {},
      });
      const job = await call('GET', `/api/v1/deployments/${deployment.body.id as string}`);
      return (job.body.job as { id: string }).id;
    },
    async job(id: string): Promise<RestJob> {
      return (await call('GET', `/api/v1/jobs/${id}`)).body as unknown as RestJob;
    },
  };
}
