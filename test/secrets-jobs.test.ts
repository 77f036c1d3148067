import { Client } from 'pg';
import { createLogger } from '../src/common/logger';
import { startTestApp, type TestApp } from './helpers/app';
import { PROGRAM, programModel, waitForJob } from './helpers/jobs';
import {
  databaseText,
  piecesOf,
  runSecretJob,
  secretModel,
  secretValues,
  setSecrets,
  sha256,
} from './helpers/secret-jobs';
import { WebhookReceiver } from './helpers/webhook-receiver';

/**
 * The job side of issue 32 on the local executor: pinned model versions, the version each job
 * records, secrets delivered to jobs and redacted everywhere else (docs/secrets.md, docs/models.md).
 */
jest.setTimeout(120_000);

let t: TestApp;
let receiver: WebhookReceiver;
let alice: string;
let bob: string;
const logged: string[] = [];

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  const log = createLogger('debug', {
    apiKeyHeader: 'x-service-key',
    destination: { write: (line: string) => logged.push(line) },
  });
  t = await startTestApp(
    {
      LOCAL_EXECUTOR_TRUST: 'any',
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE: `127.0.0.1:${receiver.port}`,
    },
    { log },
  );
  alice = `Bearer ${await t.tokenFor('sj-alice')}`;
  bob = `Bearer ${await t.tokenFor('sj-bob')}`;
});
afterAll(async () => {
  await t.close();
  await receiver.close();
});

async function sql<T>(query: string, params: unknown[] = []): Promise<T[]> {
  const pg = new Client({ connectionString: t.databaseUrl });
  await pg.connect();
  try {
    return (await pg.query(query, params)).rows;
  } finally {
    await pg.end();
  }
}

const deployRest = (auth: string, body: Record<string, unknown>) =>
  t
    .http()
    .post('/api/v1/deployments')
    .set('authorization', auth)
    .send({ name: 'run', args: {}, ...body });

const versionsOf = async (auth: string, modelId: string) =>
  (await t.http().get(`/api/v1/models/${modelId}/versions`).set('authorization', auth)).body as {
    id: string;
    sequence: number;
  }[];

describe('secrets reach the job and nothing else (local executor)', () => {
  it('refuses a deployment whose owner lacks a secret, naming it, and creates nothing', async () => {
    const modelId = await secretModel(t, bob);
    await setSecrets(t, bob, { HF_TOKEN: 'only-one-of-two' });
    const before = await sql<{ n: number }>('select count(*)::int as n from deployments');
    const res = await deployRest(bob, { model_id: modelId });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(JSON.stringify(res.body)).toContain('LICENCE_KEY');
    expect(JSON.stringify(res.body)).not.toContain('HF_TOKEN');
    const gql = await t.gql(
      'mutation ($input: CreateDeploymentInput!) { createDeployment(input: $input) { id } }',
      { input: { name: 'x', modelId, args: {} } },
      bob,
    );
    expect(gql.body.errors[0].extensions.code).toBe('VALIDATION_FAILED');
    expect(gql.body.errors[0].message).toContain('LICENCE_KEY');
    // A batch likewise, as a whole.
    const batch = await t
      .http()
      .post('/api/v1/batches')
      .set('authorization', bob)
      .send({ name: 'x', model_id: modelId, inputs: { items: [{}, {}] } });
    expect(batch.status).toBe(400);
    expect(JSON.stringify(batch.body)).toContain('LICENCE_KEY');
    expect(await sql('select count(*)::int as n from deployments')).toEqual(before);
  });

  it('gives the values as environment variables, and redacts them in logs, events, webhooks, answers and the database', async () => {
    const values = secretValues();
    await setSecrets(t, alice, values);
    const modelId = await secretModel(t, alice);
    const run = await runSecretJob(t, alice, modelId, values, receiver);

    // They reached the program, as environment variables.
    expect(run.result.HF_TOKEN).toEqual({ from: 'env', sha256: sha256(values.HF_TOKEN) });
    expect(run.result.LICENCE_KEY).toEqual({ from: 'env', sha256: sha256(values.LICENCE_KEY) });
    // The log shows the name where the value was printed, never the value.
    expect(run.logTail).toContain('env HF_TOKEN=[secret HF_TOKEN]');
    expect(run.logTail).toContain('[secret LICENCE_KEY]');
    for (const { label, text } of [
      ...run.seen,
      { label: 'the database', text: await databaseText(t.databaseUrl) },
      { label: "the service's log", text: logged.join('\n') },
    ]) {
      for (const value of [values.HF_TOKEN, ...piecesOf(values.LICENCE_KEY)])
        expect({ label, leaks: text.includes(value) }).toEqual({ label, leaks: false });
    }
    // The events and webhooks carried the redacted lines (they were sent, not dropped).
    expect(run.seen.find((s) => s.label === 'live events')!.text).toContain('[secret HF_TOKEN]');
    expect(run.seen.find((s) => s.label === 'webhook bodies')!.text).toContain('[secret HF_TOKEN]');
    expect(run.seen.find((s) => s.label === 'GraphQL subscription')!.text).toContain('[secret HF_TOKEN]');
    // The job record names them.
    const job = await t.http().get(`/api/v1/jobs/${run.jobId}`).set('authorization', alice);
    expect(job.body.secrets).toEqual(['HF_TOKEN', 'LICENCE_KEY']);
  });
});

describe('pinned versions', () => {
  let modelId: string;
  let v1: string;
  let v2: string;

  beforeAll(async () => {
    modelId = await programModel(t, alice, 'argv', {
      args: {},
      command: `node "${PROGRAM}" argv first {args}`,
    });
    const update = await t
      .http()
      .put(`/api/v1/models/${modelId}`)
      .set('authorization', alice)
      .send({
        name: 'program argv',
        container: 'local',
        command: `node "${PROGRAM}" argv second {args}`,
        args: {},
      });
    expect(update.status).toBe(200);
    const versions = await versionsOf(alice, modelId);
    expect(versions.map((v) => v.sequence)).toEqual([2, 1]);
    [v2, v1] = versions.map((v) => v.id);
  });

  it('runs exactly the pinned version, or the latest without a pin, and records it on the job', async () => {
    const pinned = await deployRest(alice, { model_id: modelId, version_id: v1 });
    expect(pinned.status).toBe(201);
    const latest = await deployRest(alice, { model_id: modelId });
    expect(latest.status).toBe(201);
    const jobOf = async (deploymentId: string) => {
      const d = await t.http().get(`/api/v1/deployments/${deploymentId}`).set('authorization', alice);
      return waitForJob(t, alice, d.body.job.id).then(async (j) => ({
        ...j,
        rest: (await t.http().get(`/api/v1/jobs/${j.id}`).set('authorization', alice)).body,
      }));
    };
    const [a, b] = await Promise.all([jobOf(pinned.body.id), jobOf(latest.body.id)]);
    expect(a.result).toEqual(['first']);
    expect(a.rest.model_version_id).toBe(v1);
    expect(b.result).toEqual(['second']);
    expect(b.rest.model_version_id).toBe(v2);
    const gql = await t.gql('query ($id: ID!) { job(id: $id) { modelVersionId } }', { id: a.id }, alice);
    expect(gql.body.data.job.modelVersionId).toBe(v1);
  });

  it('pins a batch to a version, every item running it; a version of another model is 400', async () => {
    const batchOf = (body: Record<string, unknown>) =>
      t
        .http()
        .post('/api/v1/batches')
        .set('authorization', alice)
        .send({ name: 'pinned batch', model_id: modelId, inputs: { items: [{}, {}] }, ...body });
    const pinned = await batchOf({ version_id: v1 });
    expect(pinned.status).toBe(201);
    const latest = await batchOf({});
    expect(latest.status).toBe(201);
    const jobsOf = async (batchId: string) => {
      const list = await t.http().get(`/api/v1/batches/${batchId}/jobs`).set('authorization', alice);
      return Promise.all(
        (list.body as { id: string }[]).map(async (j) => ({
          ...(await waitForJob(t, alice, j.id)),
          rest: (await t.http().get(`/api/v1/jobs/${j.id}`).set('authorization', alice)).body,
        })),
      );
    };
    const a = await jobsOf(pinned.body.id);
    expect(a).toHaveLength(2);
    for (const j of a) {
      expect(j.result).toEqual(['first']);
      expect(j.rest.model_version_id).toBe(v1);
    }
    for (const j of await jobsOf(latest.body.id)) {
      expect(j.result).toEqual(['second']);
      expect(j.rest.model_version_id).toBe(v2);
    }
    const other = await programModel(t, alice, 'argv', { args: {} });
    const [otherVersion] = await versionsOf(alice, other);
    const before = await sql<{ n: number }>('select count(*)::int as n from batches');
    const refused = await batchOf({ version_id: otherVersion.id });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('VALIDATION_FAILED');
    expect(await sql('select count(*)::int as n from batches')).toEqual(before);
  });

  it('pins over GraphQL too', async () => {
    const res = await t.gql(
      'mutation ($input: CreateDeploymentInput!) { createDeployment(input: $input) { job { id modelVersionId command } } }',
      { input: { name: 'pinned', modelId, versionId: v1, args: {} } },
      alice,
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.createDeployment.job.modelVersionId).toBe(v1);
    expect(res.body.data.createDeployment.job.command).toContain('first');
    await waitForJob(t, alice, res.body.data.createDeployment.job.id);
  });

  it('refuses a version of another model, or no version id, with 400 and creates nothing', async () => {
    const other = await programModel(t, alice, 'argv');
    const [otherVersion] = await versionsOf(alice, other);
    const before = await sql('select count(*)::int as n from jobs');
    for (const versionId of [otherVersion.id, 'not-a-uuid', '00000000-0000-4000-8000-000000000000']) {
      const res = await deployRest(alice, { model_id: modelId, version_id: versionId });
      expect(res.status).toBe(400);
      expect(res.body.error.details).toEqual({ versionId: expect.stringContaining('not a version') });
    }
    expect(await sql('select count(*)::int as n from jobs')).toEqual(before);
  });

  it('retries a job with its own version, and keeps versions that jobs ran when the model is deleted', async () => {
    const first = await deployRest(alice, { model_id: modelId, version_id: v1 });
    const d = await t.http().get(`/api/v1/deployments/${first.body.id}`).set('authorization', alice);
    await waitForJob(t, alice, d.body.job.id);
    const retry = await t.http().post(`/api/v1/jobs/${d.body.job.id}/retry`).set('authorization', alice);
    expect(retry.status).toBeLessThan(300);
    const retried = await waitForJob(t, alice, retry.body.id);
    expect(retried.result).toEqual(['first']);
    expect(retry.body.model_version_id).toBe(v1);

    const doomed = await programModel(t, alice, 'argv');
    const [version] = await versionsOf(alice, doomed);
    const ran = await deployRest(alice, { model_id: doomed, version_id: version.id });
    const ranJob = await t.http().get(`/api/v1/deployments/${ran.body.id}`).set('authorization', alice);
    await waitForJob(t, alice, ranJob.body.job.id);
    expect(
      (await t.http().delete(`/api/v1/models/${doomed}`).set('authorization', alice)).status,
    ).toBeLessThan(300);
    expect(await sql('select id from model_versions where model_id = $1', [doomed])).toEqual([
      { id: version.id },
    ]);
    const kept = await t.http().get(`/api/v1/jobs/${ranJob.body.job.id}`).set('authorization', alice);
    expect(kept.body.model_version_id).toBe(version.id);
  });

  it('answers 404 to a retry of a job whose model its owner has made private since', async () => {
    const bobsModel = await programModel(t, bob, 'argv');
    const run = await deployRest(alice, { model_id: bobsModel });
    expect(run.status).toBe(201);
    const d = await t.http().get(`/api/v1/deployments/${run.body.id}`).set('authorization', alice);
    await waitForJob(t, alice, d.body.job.id);
    const priv = await t
      .http()
      .put(`/api/v1/models/${bobsModel}`)
      .set('authorization', bob)
      .send({
        name: 'program argv',
        container: 'local',
        command: `node "${PROGRAM}" argv {args}`,
        args: {},
        visibility: 'private',
      });
    expect(priv.status).toBe(200);
    const retry = await t.http().post(`/api/v1/jobs/${d.body.job.id}/retry`).set('authorization', alice);
    expect(retry.status).toBe(404);
    expect(retry.body.error.code).toBe('NOT_FOUND');
  });
});
