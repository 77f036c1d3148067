import { Batch } from '../src/batches/batch.entity';
import { Deployment } from '../src/jobs/deployment.entity';
import { Job } from '../src/jobs/job.entity';
import { BATCH_PRIORITY } from '../src/jobs/job.queue';
import { User } from '../src/users/user.entity';
import { startTestApp, type TestApp } from './helpers/app';
import { deploy, programModel } from './helpers/jobs';
import { pngBytes, until, uploadFile } from './helpers/media';

/** Issue 30: batches (docs/batches.md). */
let t: TestApp;
let alice: string;
let bob: string;
let seq = 0;

beforeAll(async () => {
  t = await startTestApp({
    LOCAL_EXECUTOR_TRUST: 'any',
    LOCAL_EXECUTOR_CONCURRENCY: '2',
    BATCH_MAX_ITEMS: '60',
    MAX_QUEUED_JOBS: '100',
  });
  alice = `Bearer ${await t.tokenFor('alice')}`;
  bob = `Bearer ${await t.tokenFor('bob')}`;
});
afterAll(() => t.close());

const api = (auth: string) => ({
  post: (path: string, body?: unknown) =>
    t
      .http()
      .post(path)
      .set('authorization', auth)
      .send(body as object),
  get: (path: string) => t.http().get(path).set('authorization', auth),
});

/** A model running the fixture program in `mode` with a file argument `image` and an int `size`. */
const imageModel = (owner: string, mode = 'argv') =>
  programModel(t, owner, mode, {
    args: {
      image: { type: 'file', format: ':value' },
      size: { type: 'int', format: '--size=:value', min: 1, max: 10, optional: true },
    },
  });

const upload = async (auth: string, tags?: string) =>
  (await uploadFile(t, auth, pngBytes(), `m${++seq}.png`, tags)).body.media.id;

/** A batch as REST shows it, as far as these tests read it. */
interface RestBatch {
  status: string;
  total: number;
  counts: Record<'queued' | 'starting' | 'running' | 'succeeded' | 'failed' | 'canceled', number>;
  started_at: string | null;
  finished_at: string | null;
  run_seconds: number;
}

/** Polls a batch over REST until `done` says so. */
async function batchUntil(auth: string, id: string, done: (b: RestBatch) => boolean, ms = 60000) {
  return until(async () => (await api(auth).get(`/api/v1/batches/${id}`)).body as RestBatch, done, ms);
}

const rowCounts = async () => {
  const em = t.runtime.orm.em.fork();
  return {
    batches: await em.count(Batch, {}),
    deployments: await em.count(Deployment, {}),
    jobs: await em.count(Job, {}),
  };
};

describe('creating a batch', () => {
  it('runs a model over media by id: one deployment and job per item, followed to completed', async () => {
    const model = await imageModel(alice);
    const media = [await upload(alice), await upload(alice), await upload(alice)];
    const res = await api(alice).post('/api/v1/batches', {
      name: 'thumbs',
      model_id: model,
      args: { size: 3 },
      inputs: { arg: 'image', media_ids: media },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: 'thumbs',
      model_id: model,
      status: 'running',
      total: 3,
      counts: { queued: 3, starting: 0, running: 0, succeeded: 0, failed: 0, canceled: 0 },
    });
    expect(new Date(res.body.created_at).getTime()).toBeGreaterThan(Date.now() - 60000);
    const id = res.body.id as string;
    // Each item is a deployment and job as createDeployment makes them, with its batch.
    const jobs = await t.runtime.orm.em.fork().find(Job, { batch: id }, { populate: ['deployment'] });
    expect(jobs).toHaveLength(3);
    expect(jobs.map((j) => j.deployment.args.image).sort()).toEqual([...media].sort());
    expect(jobs.every((j) => j.deployment.args.size === 3)).toBe(true);

    const done = await batchUntil(alice, id, (b) => b.status === 'completed');
    expect(done.counts).toEqual({ queued: 0, starting: 0, running: 0, succeeded: 3, failed: 0, canceled: 0 });
    expect(done.started_at).not.toBeNull();
    expect(new Date(done.finished_at!).getTime()).toBeGreaterThanOrEqual(
      new Date(done.started_at!).getTime(),
    );
    expect(done.run_seconds).toBeGreaterThan(0);
    // Every existing path shows the items: the jobs list, the deployment, the batch's jobs.
    const listed = await api(alice).get(`/api/v1/batches/${id}/jobs?status=succeeded`);
    expect(listed.status).toBe(200);
    expect(listed.body).toHaveLength(3);
    const results = listed.body.map((j: { output: { result: string[] } }) => j.output.result);
    for (const m of media) expect(results).toContainEqual([expect.stringContaining(m), '--size=3']);
    const one = await api(alice).get(`/api/v1/deployments/${listed.body[0].deployment_id}`);
    expect(one.status).toBe(200);
    expect((await api(alice).get(`/api/v1/batches/${id}/jobs?status=failed`)).body).toEqual([]);
  });

  it("takes a new owner's first batch and deployments at once: none meets another in a deadlock", async () => {
    // As for deployments alone (jobs.test.ts, dispatch): every creation makes the owner's usage
    // row before it counts the model's run, a batch too.
    const model = await imageModel(alice);
    const statuses: number[] = [];
    for (let owner = 0; owner < 6; owner++) {
      const auth = `Bearer ${await t.tokenFor(`burst-${owner}`)}`;
      const media = await upload(auth);
      const answers = await Promise.all([
        api(auth).post('/api/v1/batches', {
          name: 'burst',
          model_id: model,
          inputs: { arg: 'image', media_ids: [media, media] },
        }),
        ...Array.from({ length: 8 }, () =>
          api(auth).post('/api/v1/deployments', { name: 'burst', model_id: model, args: { image: media } }),
        ),
      ]);
      statuses.push(...answers.map((a) => a.status));
      await until(
        async () => (await api(auth).get('/api/v1/jobs?status=succeeded&limit=50')).body as unknown[],
        (done) => done.length === 10,
        60000,
      );
    }
    expect(statuses).toEqual(Array(6 * 9).fill(201));
  }, 180_000);

  it('selects media by tags and exclude_tags as the media list does', async () => {
    const model = await imageModel(alice);
    const tag = `holiday${++seq}`;
    const a = await upload(alice, tag);
    const b = await upload(alice, `${tag},other`);
    await upload(alice, `${tag},raw`);
    await upload(alice, 'elsewhere');
    await upload(bob, tag); // another owner's media never joins
    const res = await api(alice).post('/api/v1/batches', {
      name: 'tagged',
      model_id: model,
      inputs: { arg: 'image', tags: [tag], exclude_tags: ['raw'] },
    });
    expect(res.status).toBe(201);
    expect(res.body.total).toBe(2);
    const jobs = await t.runtime.orm.em
      .fork()
      .find(Job, { batch: res.body.id }, { populate: ['deployment'] });
    expect(jobs.map((j) => j.deployment.args.image).sort()).toEqual([a, b].sort());
  });

  it('refuses the whole batch naming the bad items, creating nothing', async () => {
    const model = await imageModel(alice);
    const mine = await upload(alice);
    const bobs = await upload(bob);
    const before = await rowCounts();
    const res = await api(alice).post('/api/v1/batches', {
      name: 'bad',
      model_id: model,
      inputs: {
        items: [{ image: mine }, { image: mine, size: 2 }, { image: bobs }, { image: mine, size: 11 }, {}],
      },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(res.body.error.details).toEqual({
      'items[2].image': expect.stringMatching(/yours/),
      'items[3].size': expect.stringMatching(/at most 10/),
      'items[4].image': expect.stringMatching(/required/),
    });
    expect(await rowCounts()).toEqual(before);
  });

  it.each([
    ['an empty selection', { arg: 'image', media_ids: [] }, 400, 'inputs'],
    ['a tag nothing has', { arg: 'image', tags: ['nothing-has-it'] }, 400, 'inputs'],
    ['no items', { items: [] }, 400, 'inputs.items'],
    ['two forms at once', { arg: 'image', media_ids: [], items: [{}] }, 400, 'inputs'],
    [
      'an argument that is not a file',
      { arg: 'size', media_ids: ['00000000-0000-4000-8000-000000000000'] },
      400,
      'inputs.arg',
    ],
    ['more than BATCH_MAX_ITEMS', { items: Array.from({ length: 61 }, () => ({})) }, 400, 'inputs'],
  ])('refuses %s (%s)', async (_what, inputs, status, field) => {
    const model = await imageModel(alice);
    const before = await rowCounts();
    const res = await api(alice).post('/api/v1/batches', { name: 'x', model_id: model, inputs });
    expect(res.status).toBe(status);
    expect(res.body.error.details[field]).toBeTruthy();
    expect(await rowCounts()).toEqual(before);
  });

  it('creates in a constant number of statements, whatever the number of items', async () => {
    const model = await imageModel(alice);
    const media = await upload(alice);
    let recording: string[] | undefined;
    const api2 = await startTestApp(
      { ROLES: 'api', LOCAL_EXECUTOR_TRUST: 'any' },
      { databaseUrl: t.databaseUrl, issuer: t.issuer, onQuery: (sql) => recording?.push(sql) },
    );
    try {
      const statementsFor = async (n: number) => {
        recording = [];
        const res = await api2
          .http()
          .post('/api/v1/batches')
          .set('authorization', alice)
          .send({
            name: `n${n}`,
            model_id: model,
            inputs: { items: Array.from({ length: n }, () => ({ image: media })) },
          });
        const statements = recording;
        recording = undefined;
        expect(res.status).toBe(201);
        await api(alice).post(`/api/v1/batches/${res.body.id}/cancel`).expect(200);
        return statements.length;
      };
      await api2.gql('{ me { id } }', {}, alice);
      const two = await statementsFor(2);
      expect(await statementsFor(40)).toBe(two);
      expect(two).toBeLessThanOrEqual(12);
    } finally {
      await api2.close();
    }
  });
});

describe('cancel and retry', () => {
  it('cancels every job not ended, stopping the running ones', async () => {
    const model = await imageModel(alice, 'idle');
    const media = await upload(alice);
    const res = await api(alice).post('/api/v1/batches', {
      name: 'idle',
      model_id: model,
      inputs: { items: Array.from({ length: 5 }, () => ({ image: media })) },
    });
    expect(res.status).toBe(201);
    await batchUntil(alice, res.body.id, (b) => b.counts.running === 2);
    const em = t.runtime.orm.em.fork();
    const [{ owner_id: owner }] = await em.execute(`select owner_id from jobs where batch_id = ? limit 1`, [
      res.body.id,
    ]);
    const counters = async () =>
      (
        await em.execute(
          `select u.running_jobs, (select coalesce(sum(jobs), 0)::int from spend_daily s
             where s.owner_id = u.owner_id and s.model_id = ?) as spent_jobs
           from owner_usage u where u.owner_type = 'user' and u.owner_id = ?`,
          [model, owner],
        )
      )[0];
    const running = await counters();
    const canceled = await api(alice).post(`/api/v1/batches/${res.body.id}/cancel`);
    expect(canceled.status).toBe(200);
    // The two running ones gave their slots back and their run joined the spend, as a job's cancel does.
    expect(await counters()).toEqual({
      running_jobs: running.running_jobs - 2,
      spent_jobs: running.spent_jobs + 2,
    });
    expect(canceled.body.status).toBe('canceled');
    expect(canceled.body.counts).toEqual({
      queued: 0,
      starting: 0,
      running: 0,
      succeeded: 0,
      failed: 0,
      canceled: 5,
    });
    expect(canceled.body.finished_at).not.toBeNull();
    // Their workers stop them on the executor and let go of them.
    await until(
      () => t.runtime.orm.em.fork().count(Job, { batch: res.body.id, workerId: { $ne: null } }),
      (n) => n === 0,
      20000,
    );
    // Canceling again answers the batch as it is.
    const again = await api(alice).post(`/api/v1/batches/${res.body.id}/cancel`);
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('canceled');
  });

  it('retries the failed jobs as new jobs in the same batch', async () => {
    const model = await programModel(t, alice, 'fail 3', { args: { n: { type: 'int', format: ':value' } } });
    const res = await api(alice).post('/api/v1/batches', {
      name: 'failing',
      model_id: model,
      inputs: { items: [{ n: 1 }, { n: 2 }, { n: 3 }] },
    });
    expect(res.status).toBe(201);
    const id = res.body.id as string;
    const failed = await batchUntil(alice, id, (b) => b.status === 'completed');
    expect(failed.counts.failed).toBe(3);
    const retried = await api(alice).post(`/api/v1/batches/${id}/retry`);
    expect(retried.status).toBe(200);
    expect(retried.body.status).toBe('running');
    expect(retried.body.counts.failed).toBe(0);
    expect(retried.body.counts.queued + retried.body.counts.starting + retried.body.counts.running).toBe(3);
    const again = await batchUntil(alice, id, (b) => b.status === 'completed');
    expect(again.counts).toMatchObject({ failed: 3, succeeded: 0 });
    expect(again.total).toBe(3);
    const jobs = await t.runtime.orm.em.fork().find(Job, { batch: id });
    expect(jobs).toHaveLength(6);
    const firsts = jobs.filter((j) => !j.retryOf).map((j) => j.id);
    expect(
      jobs
        .filter((j) => j.retryOf)
        .map((j) => j.retryOf)
        .sort(),
    ).toEqual(firsts.sort());
    // Every job of the batch, retries included.
    expect((await api(alice).get(`/api/v1/batches/${id}/jobs`)).body).toHaveLength(6);
  });

  it('lists an ended batch from the progress its completion kept, a retried one from its jobs', async () => {
    const model = await programModel(t, bob, 'fail 3', { args: { n: { type: 'int', format: ':value' } } });
    const res = await api(bob).post('/api/v1/batches', {
      name: 'kept',
      model_id: model,
      inputs: { items: [{ n: 1 }, { n: 2 }] },
    });
    expect(res.status).toBe(201);
    const id = res.body.id as string;
    const em = () => t.runtime.orm.em.fork();
    const kept = async () => (await em().findOneOrFail(Batch, { id })).finalProgress;
    const listed = async () =>
      ((await api(bob).get('/api/v1/batches?limit=50')).body as (RestBatch & { id: string })[]).find(
        (b) => b.id === id,
      )!;
    await until(kept, (p) => p !== null);
    const ended = await batchUntil(bob, id, (b) => b.status === 'completed');
    expect(await listed()).toMatchObject({
      status: 'completed',
      counts: ended.counts,
      run_seconds: ended.run_seconds,
    });
    // The list reads the kept progress, not the jobs: a change to it shows there (and only there).
    const marked = (failed: number) =>
      em().execute(
        `update batches set final_progress = jsonb_set(final_progress, '{counts,failed}', ?::jsonb) where id = ?`,
        [String(failed), id],
      );
    await marked(99);
    expect((await listed()).counts.failed).toBe(99);
    expect((await api(bob).get(`/api/v1/batches/${id}`)).body.counts.failed).toBe(2);
    // Retried: unfinished jobs again, so the list reads them; once ended, the check keeps anew.
    expect((await api(bob).post(`/api/v1/batches/${id}/retry`)).status).toBe(200);
    // (0 read from its jobs; 2 if the retries have already failed and been kept: never the mark.)
    expect((await listed()).counts.failed).not.toBe(99);
    await batchUntil(bob, id, (b) => b.status === 'completed');
    await until(kept, (p) => (p as { counts: { failed: number } } | null)?.counts.failed === 2);
    expect((await listed()).counts).toMatchObject({ failed: 2, succeeded: 0 });
  });
});

describe('dispatch order', () => {
  it('runs a single deployment before the remaining items of its owner’s batch', async () => {
    const dave = `Bearer ${await t.tokenFor('dave-order')}`;
    const slow = await programModel(t, dave, 'lines 4 250', {
      args: { n: { type: 'int', format: ':value' } },
    });
    const res = await api(dave).post('/api/v1/batches', {
      name: 'slow',
      model_id: slow,
      inputs: { items: Array.from({ length: 50 }, (_, n) => ({ n })) },
    });
    expect(res.status).toBe(201);
    await batchUntil(dave, res.body.id, (b) => b.counts.running >= 1, 30000);
    const single = await deploy(t, dave, slow, { n: 99 });
    const em = () => t.runtime.orm.em.fork();
    const started = await until(
      () => em().findOneOrFail(Job, single.jobId),
      (j) => j.startedAt !== null,
      30000,
    );
    // At the single job's start, only the items that held the two slots before it (and those
    // that started alongside) have started: not the batch's remaining ones.
    const before = await em().count(Job, { batch: res.body.id, startedAt: { $lte: started.startedAt! } });
    expect(before).toBeLessThanOrEqual(4);
    await api(dave).post(`/api/v1/batches/${res.body.id}/cancel`).expect(200);
  });
});

describe('tenancy', () => {
  let batchId: string;
  let model: string;
  let media: string;

  beforeAll(async () => {
    model = await imageModel(alice);
    media = await upload(alice);
    const res = await api(alice).post('/api/v1/batches', {
      name: 'mine',
      model_id: model,
      inputs: { arg: 'image', media_ids: [media] },
    });
    batchId = res.body.id;
  });

  it('answers 404 for a foreign batch on every path, REST and GraphQL', async () => {
    for (const [method, path] of [
      ['get', `/api/v1/batches/${batchId}`],
      ['get', `/api/v1/batches/${batchId}/jobs`],
      ['post', `/api/v1/batches/${batchId}/cancel`],
      ['post', `/api/v1/batches/${batchId}/retry`],
      ['get', '/api/v1/batches/not-an-id'],
    ] as const) {
      const res = method === 'get' ? await api(bob).get(path) : await api(bob).post(path);
      expect([path, res.status, res.body.error?.code]).toEqual([path, 404, 'NOT_FOUND']);
    }
    for (const query of [
      'query ($id: ID!) { batch(id: $id) { id } }',
      'query ($id: ID!) { batchJobs(id: $id) { nodes { id } } }',
      'mutation ($id: ID!) { cancelBatch(id: $id) { id } }',
      'mutation ($id: ID!) { retryBatch(id: $id) { id } }',
    ]) {
      const res = await t.gql(query, { id: batchId }, bob);
      expect(res.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    }
    // Bob's list does not show it; nor can he run it over Alice's media.
    const list = await api(bob).get('/api/v1/batches');
    expect(list.body.map((b: { id: string }) => b.id)).not.toContain(batchId);
    const bobModel = await imageModel(bob);
    const foreign = await api(bob).post('/api/v1/batches', {
      name: 'x',
      model_id: bobModel,
      inputs: { arg: 'image', media_ids: [media] },
    });
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.details['items[0].image']).toMatch(/yours/);
  });

  it('lists the owner’s batches, paged with a Link', async () => {
    const first = await api(alice).get('/api/v1/batches?limit=1');
    expect(first.status).toBe(200);
    expect(first.body).toHaveLength(1);
    expect(first.headers.link).toMatch(/rel="next"/);
    const next = /<([^>]+)>/.exec(first.headers.link)![1];
    const second = await api(alice).get(next);
    expect(second.body).toHaveLength(1);
    expect(second.body[0].id).not.toBe(first.body[0].id);
  });

  it("gives a team's viewers reads and its members creation, cancel and retry", async () => {
    const owner = await person('team-owner');
    const { createTeam } = await ok<{ createTeam: { id: string } }>(
      'mutation { createTeam(input: { name: "lab" }) { id } }',
      {},
      owner.token,
    );
    const teamId = createTeam.id;
    const viewer = await person('team-viewer');
    const member = await person('team-member');
    for (const [who, role] of [
      [viewer, 'VIEWER'],
      [member, 'MEMBER'],
    ] as const) {
      const { inviteToTeam } = await ok<{ inviteToTeam: { token: string } }>(
        'mutation ($teamId: ID!, $input: InviteToTeamInput!) { inviteToTeam(teamId: $teamId, input: $input) { token } }',
        { teamId, input: { username: who.sub, role } },
        owner.token,
      );
      await ok(
        'mutation ($input: InviteAnswerInput!) { acceptInvite(input: $input) { member { userId } } }',
        { input: { token: inviteToTeam.token } },
        who.token,
      );
    }
    const asMember = await sessionFor(member.sub, teamId);
    const asViewer = await sessionFor(viewer.sub, teamId);
    const teamModel = await imageModel(asMember);
    const teamMedia = await upload(asMember);
    const body = { name: 'team', model_id: teamModel, inputs: { arg: 'image', media_ids: [teamMedia] } };
    const refused = await api(asViewer).post('/api/v1/batches', body);
    expect(refused.status).toBe(403);
    const made = await api(asMember).post('/api/v1/batches', body);
    expect(made.status).toBe(201);
    const id = made.body.id;
    expect((await api(asViewer).get(`/api/v1/batches/${id}`)).status).toBe(200);
    expect((await api(asViewer).get(`/api/v1/batches/${id}/jobs`)).status).toBe(200);
    expect((await api(asViewer).get('/api/v1/batches')).body.map((b: { id: string }) => b.id)).toContain(id);
    expect((await api(asViewer).post(`/api/v1/batches/${id}/cancel`)).status).toBe(403);
    expect((await api(asViewer).post(`/api/v1/batches/${id}/retry`)).status).toBe(403);
    expect((await api(asMember).post(`/api/v1/batches/${id}/cancel`)).status).toBe(200);
    expect((await api(asMember).post(`/api/v1/batches/${id}/retry`)).status).toBe(200);
    // The member acting as themselves, not for the team, does not see the team's batch.
    expect((await api(member.token).get(`/api/v1/batches/${id}`)).status).toBe(404);
  });
});

describe('without a worker (the jobs stay queued)', () => {
  let api2: TestApp;
  let model: string;
  const create = (name: string, items: unknown[]) =>
    api2
      .http()
      .post('/api/v1/batches')
      .set('authorization', alice)
      .send({ name, model_id: model, inputs: { items } });

  beforeAll(async () => {
    // Its own database, with no worker.
    api2 = await startTestApp(
      { ROLES: 'api', LOCAL_EXECUTOR_TRUST: 'any', BATCH_MAX_ITEMS: '60', MAX_QUEUED_JOBS: '100' },
      { issuer: t.issuer },
    );
    model = await programModel(api2, alice, 'argv', { args: { n: { type: 'int', format: ':value' } } });
  });
  afterAll(() => api2.close());

  it('refuses with 429 past MAX_QUEUED_JOBS queued jobs of the owner', async () => {
    expect(
      (
        await create(
          'sixty',
          Array.from({ length: 60 }, (_, n) => ({ n })),
        )
      ).status,
    ).toBe(201);
    const refused = await create(
      'too many',
      Array.from({ length: 41 }, (_, n) => ({ n })),
    );
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('RATE_LIMITED');
    expect(refused.body.error.message).toMatch(/60 queued.*41.*MAX_QUEUED_JOBS/);
    const fits = await create(
      'fits',
      Array.from({ length: 40 }, (_, n) => ({ n })),
    );
    expect(fits.status).toBe(201);
    // Canceled jobs are not queued any more.
    await api2.http().post(`/api/v1/batches/${fits.body.id}/cancel`).set('authorization', alice).expect(200);
    expect((await create('again', [{ n: 1 }])).status).toBe(201);
  });

  it('claims up to a limit of a chunk’s queued jobs in one statement; dispatch tasks carry the batch priority', async () => {
    const res = await create(
      'chunk',
      Array.from({ length: 7 }, (_, n) => ({ n })),
    );
    expect(res.status).toBe(201);
    const em = api2.runtime.orm.em.fork();
    const tasks: {
      task_identifier: string;
      priority: number;
      payload: { batchId: string; jobIds: string[] };
    }[] = await em.execute(
      `select t.identifier as task_identifier, j.priority, j.payload
         from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
         where j.payload->>'batchId' = ?`,
      [res.body.id],
    );
    expect(tasks).toHaveLength(1);
    expect(tasks[0]).toMatchObject({ task_identifier: 'dispatch_batch', priority: BATCH_PRIORITY });
    const ids = tasks[0].payload.jobIds;
    expect(ids.sort()).toEqual((await em.find(Job, { batch: res.body.id })).map((j) => j.id).sort());
    // One canceled meanwhile is not claimed.
    const jobs = api2.runtime.services.jobs;
    await jobs.transition(ids[0], 'canceled', {});
    const worker = '00000000-0000-4000-8000-0000000000aa';
    const [{ owner_id: owner }] = await em.execute(`select owner_id from jobs where id = ?`, [ids[0]]);
    const usage = async () =>
      (
        await em.execute(`select running_jobs from owner_usage where owner_type = 'user' and owner_id = ?`, [
          owner,
        ])
      )[0]?.running_jobs ?? 0;
    const before = await usage();
    // A quota the set does not fit: none of it is claimed, and the caller learns that some were free.
    await em.execute(
      `insert into owner_quotas (owner_type, owner_id, max_running_jobs, machines, shares, updated_at)
       values ('user', ?, ?, '{}', 1, now())`,
      [owner, before + 3],
    );
    expect(await jobs.claimQueued(ids, worker, 4)).toEqual({ jobs: [], picked: 4 });
    expect(await usage()).toBe(before);
    await em.execute(`update owner_quotas set max_running_jobs = ? where owner_id = ?`, [before + 6, owner]);
    const first = await jobs.claimQueued(ids, worker, 4);
    expect(first.jobs).toHaveLength(4);
    expect(first.jobs.every((j) => j.status === 'starting' && j.workerId === worker && j.claimedAt)).toBe(
      true,
    );
    // They count as running for their owner, as one claim's job does.
    expect(await usage()).toBe(before + 4);
    const rest = await jobs.claimQueued(ids, worker, 100);
    expect(rest.jobs).toHaveLength(2);
    expect(await usage()).toBe(before + 6);
    expect(await jobs.claimQueued(ids, worker, 100)).toEqual({ jobs: [], picked: 0 });
    await em.execute(`delete from owner_quotas where owner_id = ?`, [owner]);
    const transitions = await em.execute(
      `select count(*)::int as n from job_transitions where job_id = any(?::uuid[]) and to_status = 'starting'`,
      [`{${ids.join(',')}}`],
    );
    expect(transitions[0].n).toBe(6);
  });

  it('takes a chunk apart for an executor without submitMany: one task per queued job, at the batch’s priority', async () => {
    const res = await create('each', [{ n: 1 }, { n: 2 }, { n: 3 }]);
    const em = api2.runtime.orm.em.fork();
    const ids = (await em.find(Job, { batch: res.body.id })).map((j) => j.id);
    await api2.runtime.services.jobs.transition(ids[0], 'canceled', {});
    await api2.runtime.services.jobs.dispatchEach(ids);
    const each: { priority: number; job_id: string }[] = await em.execute(
      `select j.priority, j.payload->>'jobId' as job_id
       from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
       where t.identifier = 'dispatch_job' and j.payload->>'jobId' = any(?::text[])`,
      [`{${ids.join(',')}}`],
    );
    expect(each.map((e) => e.job_id).sort()).toEqual(ids.slice(1).sort());
    expect(each.every((e) => e.priority === BATCH_PRIORITY)).toBe(true);
  });
});

async function person(name: string): Promise<{ sub: string; token: string }> {
  const sub = `${name}-${++seq}`;
  const token = `Bearer ${await t.tokenFor(sub, { preferred_username: sub, email: `${sub}@x.test`, email_verified: true })}`;
  await t.gql('{ me { id } }', {}, token);
  return { sub, token };
}

async function ok<T = Record<string, unknown>>(
  query: string,
  variables: Record<string, unknown>,
  auth: string,
) {
  const res = await t.gql(query, variables, auth);
  if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
  return res.body.data as T;
}

async function sessionFor(sub: string, teamId: string): Promise<string> {
  const user = await t.runtime.orm.em.fork().findOneOrFail(User, { subject: sub });
  const cookie = await t.runtime.services.sessions.open(user, null);
  const { accessToken } = await t.runtime.services.login.sessionToken({ cookie, teamId });
  return `Bearer ${accessToken}`;
}
