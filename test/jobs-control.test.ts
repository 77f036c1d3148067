import { NEVER_STARTED } from '../src/executors/local.executor';
import { Deployment } from '../src/jobs/deployment.entity';
import { startTestApp, type TestApp } from './helpers/app';
import { alive, BUILTIN, deploy, jobOf, launcherOf, programModel, waitForJob } from './helpers/jobs';
import { until, uploadFile } from './helpers/media';

jest.setTimeout(90_000);

let t: TestApp;
let alice: string;
let bob: string;

beforeAll(async () => {
  // One job at a time: a second job stays queued while an idle one runs.
  t = await startTestApp({ LOCAL_EXECUTOR_TRUST: 'any', LOCAL_EXECUTOR_CONCURRENCY: '1' });
  alice = `Bearer ${await t.tokenFor('alice')}`;
  bob = `Bearer ${await t.tokenFor('bob')}`;
});
afterAll(() => t.close());

/** Cancels what is still unfinished, so each test starts with a free worker slot. */
afterEach(async () => {
  for (const auth of [alice, bob]) {
    for (const status of ['running', 'starting', 'queued']) {
      const list = await t.http().get(`/api/v1/jobs?status=${status}&limit=200`).set('authorization', auth);
      for (const job of list.body as { id: string }[])
        await t.http().post(`/api/v1/jobs/${job.id}/cancel`).set('authorization', auth);
    }
  }
});

function post(path: string, auth: string, body: unknown, headers: Record<string, string> = {}) {
  const req = t.http().post(path).set('authorization', auth);
  for (const [k, v] of Object.entries(headers)) req.set(k, v);
  return req.send(body as object);
}

async function wordsMedia(auth: string): Promise<string> {
  return (await uploadFile(t, auth, Buffer.from('one two three\n'), 'w.txt')).body.media.id;
}

describe('Prefer: wait', () => {
  it("answers a short job's result in the same request", async () => {
    const text = await wordsMedia(alice);
    const res = await post(
      '/api/v1/deployments',
      alice,
      { name: 'sync', model_id: BUILTIN.wordcount, args: { text } },
      { prefer: 'wait' },
    );
    expect(res.status).toBe(201);
    expect(res.headers['preference-applied']).toBe('wait=60');
    expect(res.body).toMatchObject({ model_id: BUILTIN.wordcount, source_asset_id: text });
    expect(res.body.job).toMatchObject({
      deployment_id: res.body.id,
      status: 'succeeded',
      output: { result: { lines: 1, words: 3, characters: 14 } },
    });
    // The job exactly as GET /api/v1/jobs/{id} shows it.
    const got = await t.http().get(`/api/v1/jobs/${res.body.job.id}`).set('authorization', alice);
    expect(res.body.job).toEqual(got.body);
  });

  it('answers when the time is up with the job as it is then; without the header, the legacy shape', async () => {
    const idle = await programModel(t, alice, 'idle');
    const waited = await post(
      '/api/v1/deployments',
      alice,
      { name: 'w', model_id: idle, args: {} },
      { prefer: 'wait=1' },
    );
    expect(waited.status).toBe(201);
    expect(waited.headers['preference-applied']).toBe('wait=1');
    expect(['queued', 'starting', 'running']).toContain(waited.body.job.status);

    const plain = await post('/api/v1/deployments', alice, { name: 'p', model_id: idle, args: {} });
    expect(plain.status).toBe(201);
    expect(plain.headers['preference-applied']).toBeUndefined();
    expect(Object.keys(plain.body).sort()).toEqual(['id', 'model_id', 'source_asset_id', 'target_asset_id']);
    // A malformed preference is ignored, as RFC 7240 says.
    const ignored = await post(
      '/api/v1/deployments',
      alice,
      { name: 'i', model_id: idle, args: {} },
      { prefer: 'wait=soon' },
    );
    expect(ignored.status).toBe(201);
    expect(ignored.body.job).toBeUndefined();
  });

  it('holds no database connection while it waits: more waiting requests than the pool still leave room', async () => {
    const idle = await programModel(t, bob, 'idle');
    // The pool has 10 connections; 12 requests wait at once.
    let settled = 0;
    const waiting = Array.from({ length: 12 }, (_, i) =>
      post(
        '/api/v1/deployments',
        bob,
        { name: `wait ${i}`, model_id: idle, args: {} },
        { prefer: 'wait=50' },
      ).then((res) => {
        settled++;
        return res;
      }),
    );
    const created = await until(
      async () =>
        (await t.http().get('/api/v1/jobs?limit=50').set('authorization', bob)).body as { id: string }[],
      (jobs) => jobs.length === 12,
      30000,
    );
    expect(created).toHaveLength(12);
    // Other requests are served while all of them wait.
    const list = await t.http().get('/api/v1/deployments').set('authorization', bob);
    expect(list.status).toBe(200);
    expect(settled).toBe(0);
    // Ending the jobs ends the waits, each with its job's final state.
    for (const job of created) await t.http().post(`/api/v1/jobs/${job.id}/cancel`).set('authorization', bob);
    const answers = await Promise.all(waiting);
    expect(answers.map((a) => a.body.job.status)).toEqual(Array(12).fill('canceled'));
  });

  it('is a GraphQL argument too, bounded to 60 s', async () => {
    const text = await wordsMedia(alice);
    const res = await t.gql(
      'mutation ($input: CreateDeploymentInput!) { createDeployment(input: $input, wait: 30) { job { status result } } }',
      { input: { name: 'g', modelId: BUILTIN.wordcount, args: { text } } },
      alice,
    );
    expect(res.body.data.createDeployment.job).toEqual({
      status: 'SUCCEEDED',
      result: { lines: 1, words: 3, characters: 14 },
    });
    const tooLong = await t.gql(
      'mutation ($input: CreateDeploymentInput!) { createDeployment(input: $input, wait: 61) { id } }',
      { input: { name: 'g', modelId: BUILTIN.wordcount, args: { text } } },
      alice,
    );
    expect(tooLong.body.errors[0].extensions.code).toBe('VALIDATION_FAILED');
  });
});

describe('Cancel-After', () => {
  it('cancels a running job at its deadline, saying so', async () => {
    const idle = await programModel(t, alice, 'idle');
    const res = await post(
      '/api/v1/deployments',
      alice,
      { name: 'd', model_id: idle, args: {} },
      { 'cancel-after': '2s' },
    );
    expect(res.status).toBe(201);
    const jobId = (await t.http().get(`/api/v1/deployments/${res.body.id}`).set('authorization', alice)).body
      .job.id;
    const running = await waitForJob(t, alice, jobId, (j) => j.status === 'RUNNING');
    const pid = Number(running.externalId);
    const job = await waitForJob(t, alice, jobId);
    expect(job.status).toBe('CANCELED');
    expect(job.error).toMatch(/had not ended by its deadline \(Cancel-After\)/);
    expect(
      await until(
        async () => alive(pid),
        (a) => !a,
      ),
    ).toBe(false);
    const rest = await t.http().get(`/api/v1/jobs/${jobId}`).set('authorization', alice);
    expect(new Date(rest.body.deadline_at).getTime() - new Date(rest.body.created_at).getTime()).toBe(2000);
  });

  it('counts queue time: a job still queued at its deadline never runs', async () => {
    const idle = await programModel(t, alice, 'idle');
    const busy = await deploy(t, alice, idle, {});
    await waitForJob(t, alice, busy.jobId, (j) => j.status === 'RUNNING');
    const res = await t.gql(
      'mutation ($input: CreateDeploymentInput!) { createDeployment(input: $input) { job { id deadlineAt } } }',
      { input: { name: 'q', modelId: idle, args: {}, cancelAfter: '1s' } },
      alice,
    );
    const { id, deadlineAt } = res.body.data.createDeployment.job;
    expect(deadlineAt).not.toBeNull();
    const job = await waitForJob(t, alice, id);
    expect(job.status).toBe('CANCELED');
    expect(job.startedAt).toBeNull();
    const transitions = await t.gql(
      'query ($id: ID!) { job(id: $id) { transitions { to } } }',
      { id },
      alice,
    );
    expect(transitions.body.data.job.transitions.map((x: { to: string }) => x.to)).toEqual([
      'QUEUED',
      'CANCELED',
    ]);
    expect((await jobOf(t, alice, busy.jobId)).status).toBe('RUNNING');
  });

  it.each(['soon', '0s', '500ms', '169h', '5m1h', '-1s'])(
    'refuses %j with VALIDATION_FAILED, creating nothing',
    async (value) => {
      const before = await t.runtime.orm.em.fork().count(Deployment, {});
      const res = await post(
        '/api/v1/deployments',
        alice,
        { name: 'x', model_id: BUILTIN.wordcount, args: { text: await wordsMedia(alice) } },
        { 'cancel-after': value },
      );
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
      expect(res.body.error.details.cancelAfter).toMatch(/duration/);
      expect(await t.runtime.orm.em.fork().count(Deployment, {})).toBe(before);
    },
  );
});

describe('retries', () => {
  it('retries an ended job on request: a new job of the same deployment, linked to the first', async () => {
    const failing = await programModel(t, alice, 'fail', {
      command: `node "${__dirname}/fixtures/job-program.js" fail 4 {args}`,
    });
    const first = await deploy(t, alice, failing, {});
    expect((await waitForJob(t, alice, first.jobId)).status).toBe('FAILED');

    const res = await post(`/api/v1/jobs/${first.jobId}/retry`, alice, undefined);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      deployment_id: first.id,
      model_id: failing,
      status: 'queued',
      attempt: 1,
      retry_of: first.jobId,
      infrastructure_failure: false,
    });
    expect(res.body.id).not.toBe(first.jobId);
    const again = await waitForJob(t, alice, res.body.id);
    expect(again).toMatchObject({ status: 'FAILED', exitCode: 4 });
    // The deployment shows its latest job, and all of them over GraphQL.
    const deployment = await t.http().get(`/api/v1/deployments/${first.id}`).set('authorization', alice);
    expect(deployment.body.job.id).toBe(res.body.id);
    const gql = await t.gql(
      'query ($id: ID!) { deployment(id: $id) { jobs { id retryOfId } } }',
      { id: first.id },
      alice,
    );
    expect(gql.body.data.deployment.jobs).toEqual([
      { id: res.body.id, retryOfId: first.jobId },
      { id: first.jobId, retryOfId: null },
    ]);
  });

  it('refuses to retry a job that has not ended (409) or is not yours (404); GraphQL retryJob takes a deadline', async () => {
    const idle = await programModel(t, alice, 'idle');
    const { jobId } = await deploy(t, alice, idle, {});
    const early = await post(`/api/v1/jobs/${jobId}/retry`, alice, undefined);
    expect(early.status).toBe(409);
    expect(early.body.error.code).toBe('CONFLICT');
    await t.http().post(`/api/v1/jobs/${jobId}/cancel`).set('authorization', alice);
    expect((await post(`/api/v1/jobs/${jobId}/retry`, bob, undefined)).status).toBe(404);
    expect((await post('/api/v1/jobs/not-an-id/retry', alice, undefined)).status).toBe(404);
    const retried = await t.gql(
      'mutation ($id: ID!) { retryJob(id: $id, cancelAfter: "1s") { id retryOfId deadlineAt } }',
      { id: jobId },
      alice,
    );
    expect(retried.body.data.retryJob).toMatchObject({ retryOfId: jobId });
    expect(retried.body.data.retryJob.deadlineAt).not.toBeNull();
    expect((await waitForJob(t, alice, retried.body.data.retryJob.id)).error).toMatch(/deadline/);
  });

  it("retries automatically, up to the model's max_retries, when the infrastructure fails; never a program's own failure", async () => {
    const idle = await programModel(t, alice, 'idle', { max_retries: 1 });
    const model = await t.gql('query ($id: ID!) { model(id: $id) { maxRetries } }', { id: idle }, alice);
    expect(model.body.data.model.maxRetries).toBe(1);

    const first = await deploy(t, alice, idle, {});
    const running = await waitForJob(t, alice, first.jobId, (j) => j.status === 'RUNNING');
    // The launcher that runs its process dies: the executor loses the job.
    process.kill(launcherOf(Number(running.externalId)), 'SIGKILL');
    expect(await waitForJob(t, alice, first.jobId)).toMatchObject({ status: 'FAILED' });
    const failed = (await t.http().get(`/api/v1/jobs/${first.jobId}`).set('authorization', alice)).body;
    expect(failed).toMatchObject({ infrastructure_failure: true, attempt: 1, max_retries: 1 });

    const deployment = await t.http().get(`/api/v1/deployments/${first.id}`).set('authorization', alice);
    const second = deployment.body.job;
    expect(second).toMatchObject({ retry_of: first.jobId, attempt: 2 });
    const secondRunning = await waitForJob(t, alice, second.id, (j) => j.status === 'RUNNING');
    process.kill(launcherOf(Number(secondRunning.externalId)), 'SIGKILL');
    expect((await waitForJob(t, alice, second.id)).status).toBe('FAILED');
    // Its retries are used up: no third job.
    const jobs = await t.gql(
      'query ($id: ID!) { deployment(id: $id) { jobs { attempt } } }',
      { id: first.id },
      alice,
    );
    expect(jobs.body.data.deployment.jobs).toEqual([{ attempt: 2 }, { attempt: 1 }]);

    const failing = await programModel(t, alice, 'fail', {
      max_retries: 3,
      command: `node "${__dirname}/fixtures/job-program.js" fail 1 {args}`,
    });
    const own = await deploy(t, alice, failing, {});
    expect((await waitForJob(t, alice, own.jobId)).status).toBe('FAILED');
    const after = await t.gql(
      'query ($id: ID!) { deployment(id: $id) { jobs { infrastructureFailure } } }',
      { id: own.id },
      alice,
    );
    expect(after.body.data.deployment.jobs).toEqual([{ infrastructureFailure: false }]);
  });

  it('queues a job its worker gave up before starting it (a shutdown) again as the same attempt, whatever max_retries says', async () => {
    // Its own database and no worker: the jobs stay where this test puts them.
    const api = await startTestApp({ ROLES: 'api', LOCAL_EXECUTOR_TRUST: 'any' }, { issuer: t.issuer });
    try {
      const idle = await programModel(api, alice, 'idle', { max_retries: 0 });
      const { id: deploymentId, jobId } = await deploy(api, alice, idle, {});
      const { jobs } = api.runtime.services;
      const worker = '00000000-0000-4000-8000-0000000000bb';
      expect((await jobs.claimQueued([jobId], worker, 1)).jobs).toHaveLength(1);
      await jobs.transition(jobId, 'failed', { infrastructure: true, neverRan: true, error: NEVER_STARTED });
      const attempts = async () =>
        (
          await api.gql(
            'query ($id: ID!) { deployment(id: $id) { jobs { id status attempt retryOfId error } } }',
            { id: deploymentId },
            alice,
          )
        ).body.data.deployment.jobs as { id: string; status: string; attempt: number; retryOfId: string }[];
      const [again, first] = await attempts();
      expect(first).toMatchObject({ id: jobId, status: 'FAILED', attempt: 1, error: NEVER_STARTED });
      expect(again).toMatchObject({ status: 'QUEUED', attempt: 1, retryOfId: jobId });
      // The same failure of a job that did run is counted: max_retries 0, so no retry.
      expect((await jobs.claimQueued([again.id], worker, 1)).jobs).toHaveLength(1);
      await jobs.transition(again.id, 'failed', { infrastructure: true, error: 'the node failed' });
      expect((await attempts()).map((j) => j.status)).toEqual(['FAILED', 'FAILED']);
    } finally {
      await api.close();
    }
  });

  it('refuses max_retries outside 0 to 10', async () => {
    const res = await post('/api/v1/models', alice, {
      name: 'm',
      container: 'local',
      args: {},
      max_retries: 11,
    });
    expect(res.status).toBe(400);
    expect(res.body.error.details.maxRetries).toMatch(/between 0 and 10/);
  });
});
