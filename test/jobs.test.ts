import { createClient, type Client } from 'graphql-ws';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import WebSocket from 'ws';
import { Deployment } from '../src/jobs/deployment.entity';
import { Model } from '../src/models/model.entity';
import { startTestApp, type TestApp } from './helpers/app';
import {
  alive,
  BUILTIN,
  deploy,
  jobOf,
  PROGRAM,
  programModel as sharedProgramModel,
  waitForJob,
} from './helpers/jobs';
import { pngBytes, until, uploadFile } from './helpers/media';

let t: TestApp;
/** SQL statements of an app, while a test records them. */
let recording: string[] | undefined;
let alice: string;
let bob: string;
let operator: string;

beforeAll(async () => {
  // A secret in the service's own environment must never reach a job's.
  process.env.MEDIA_TEST_CANARY_SECRET = 'canary';
  t = await startTestApp({ ADMIN_SUBJECTS: 'operator', LOCAL_EXECUTOR_CONCURRENCY: '2' });
  alice = `Bearer ${await t.tokenFor('alice')}`;
  bob = `Bearer ${await t.tokenFor('bob')}`;
  operator = `Bearer ${await t.tokenFor('operator')}`;
});
afterAll(() => t.close());

/** A model running the fixture program in `mode`, owned by `owner` (the operator by default). */
const programModel = (
  mode: string,
  args: Record<string, unknown> = {},
  more: Record<string, unknown> = {},
  owner = operator,
): Promise<string> => sharedProgramModel(t, owner, mode, { args, ...more });

function connect(auth: string): Client {
  return createClient({
    url: `ws://127.0.0.1:${t.port}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: auth },
    retryAttempts: 0,
  });
}

/** Collects subscription events until `until` says stop; also answers errors. */
function collect<T>(
  client: Client,
  query: string,
  variables: Record<string, unknown>,
  stop: (events: T[]) => boolean,
): { events: T[]; done: Promise<T[]>; errors: unknown[]; dispose: () => void } {
  const events: T[] = [];
  const errors: unknown[] = [];
  let dispose = () => undefined as void;
  const done = new Promise<T[]>((resolve) => {
    dispose = client.subscribe<T>(
      { query, variables },
      {
        next: (v) => {
          if (v.errors) errors.push(...v.errors);
          if (v.data) events.push(v.data as T);
          if (stop(events)) {
            dispose();
            resolve(events);
          }
        },
        error: (e) => {
          errors.push(e);
          resolve(events);
        },
        complete: () => resolve(events),
      },
    );
  });
  return { events, done, errors, dispose: () => dispose() };
}

describe('creating a deployment', () => {
  it('answers the legacy shape over REST, counts the run and creates one job', async () => {
    const media = (await uploadFile(t, alice, Buffer.from('a b c\n'), 'w.txt')).body.media.id;
    const before = (await t.runtime.orm.em.fork().findOneOrFail(Model, BUILTIN.wordcount)).runCount;
    const res = await t
      .http()
      .post('/api/v1/deployments')
      .set('authorization', alice)
      .send({ name: 'count', model_id: BUILTIN.wordcount, args: { text: media } });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['id', 'model_id', 'source_asset_id', 'target_asset_id']);
    expect(res.body).toMatchObject({ model_id: BUILTIN.wordcount, source_asset_id: media });
    const after = (await t.runtime.orm.em.fork().findOneOrFail(Model, BUILTIN.wordcount)).runCount;
    expect(after).toBe(before + 1);

    const one = await t.http().get(`/api/v1/deployments/${res.body.id}`).set('authorization', alice);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({
      id: res.body.id,
      name: 'count',
      model_id: BUILTIN.wordcount,
      args: { text: media },
      source_asset_id: media,
      target_asset_id: res.body.target_asset_id,
    });
    const job = await waitForJob(t, alice, one.body.job.id);
    expect(job.status).toBe('SUCCEEDED');
    const rest = await t.http().get(`/api/v1/jobs/${job.id}`).set('authorization', alice);
    expect(rest.body).toMatchObject({
      id: job.id,
      deployment_id: res.body.id,
      model_id: BUILTIN.wordcount,
      status: 'succeeded',
      executor: 'local',
      exit_code: 0,
      error: null,
      result_urls: job.resultUrls,
      output: {
        result: { lines: 1, words: 3, characters: 6 },
        files: [
          {
            id: res.body.target_asset_id,
            name: 'wordcount.json',
            url: job.resultUrls[0],
            content_type: 'application/json',
          },
        ],
      },
    });
    expect(rest.body.queue_seconds).toBeGreaterThanOrEqual(0);
    expect(rest.body.run_seconds).toBeGreaterThan(0);
    // The output is a target asset of the owner, served like any media.
    const served = await t.http().get(new URL(job.resultUrls[0]).pathname);
    expect(JSON.parse(served.text)).toEqual({ lines: 1, words: 3, characters: 6 });
    const list = await t.http().get('/api/v1/media').set('authorization', alice);
    expect(list.body.media.find((m: { id: string }) => m.id === res.body.target_asset_id)).toMatchObject({
      type: 'target_asset',
      status: 'live',
    });
  });

  describe('argument checking', () => {
    let modelId: string;
    let mine: string;
    let bobs: string;

    beforeAll(async () => {
      modelId = await programModel('argv', {
        input: { type: 'file', format: ':value' },
        size: { type: 'int', format: '--size=:value', min: 1, max: 10, optional: true },
        ratio: { type: 'float', format: '--ratio=:value', min: 0, max: 1, optional: true },
        label: { type: 'string', format: '--label=:value', optional: true },
      });
      mine = (await uploadFile(t, alice, pngBytes(), 'mine.png')).body.media.id;
      bobs = (await uploadFile(t, bob, pngBytes(), 'bobs.png')).body.media.id;
    });

    const cases: [string, () => Record<string, unknown>, string, RegExp][] = [
      ['a missing required argument', () => ({}), 'args.input', /required/],
      ['an unknown argument', () => ({ input: mine, colour: 'red' }), 'args.colour', /not an argument/],
      ['an int that is not one', () => ({ input: mine, size: 'big' }), 'args.size', /integer/],
      ['an int below min', () => ({ input: mine, size: 0 }), 'args.size', /at least 1/],
      ['an int above max', () => ({ input: mine, size: 11 }), 'args.size', /at most 10/],
      ['a float above max', () => ({ input: mine, ratio: 1.5 }), 'args.ratio', /at most 1/],
      ['a string that is not one', () => ({ input: mine, label: ['x'] }), 'args.label', /string/],
      ['a file that is no media id', () => ({ input: '/etc/passwd' }), 'args.input', /media/],
      [
        'a media id that does not exist',
        () => ({ input: '00000000-0000-4000-8000-000000000000' }),
        'args.input',
        /yours/,
      ],
      ["another owner's media", () => ({ input: bobs }), 'args.input', /yours/],
    ];

    it.each(cases)(
      'refuses %s with VALIDATION_FAILED naming it, creating nothing',
      async (_what, args, field, message) => {
        const em = t.runtime.orm.em.fork();
        const deployments = await em.count(Deployment, {});
        const runCount = (await em.findOneOrFail(Model, modelId)).runCount;
        const res = await t
          .http()
          .post('/api/v1/deployments')
          .set('authorization', alice)
          .send({ name: 'x', model_id: modelId, args: args() });
        expect(res.status).toBe(400);
        expect(res.body.error.code).toBe('VALIDATION_FAILED');
        expect(res.body.error.details[field]).toMatch(message);
        const after = t.runtime.orm.em.fork();
        expect(await after.count(Deployment, {})).toBe(deployments);
        expect((await after.findOneOrFail(Model, modelId)).runCount).toBe(runCount);
      },
    );

    it('answers 404 for an unknown model and 400 for a bad body', async () => {
      const unknown = await t
        .http()
        .post('/api/v1/deployments')
        .set('authorization', alice)
        .send({ name: 'x', model_id: '00000000-0000-4000-8000-000000000000', args: {} });
      expect(unknown.status).toBe(404);
      const noName = await t
        .http()
        .post('/api/v1/deployments')
        .set('authorization', alice)
        .send({ model_id: modelId });
      expect(noName.status).toBe(400);
      const argsList = await t
        .http()
        .post('/api/v1/deployments')
        .set('authorization', alice)
        .send({ name: 'x', model_id: modelId, args: [1] });
      expect(argsList.status).toBe(400);
    });
  });

  it("runs only built-in and operators' models on the local executor by default", async () => {
    const own = await programModel('argv', {}, {}, alice);
    const res = await t
      .http()
      .post('/api/v1/deployments')
      .set('authorization', alice)
      .send({ name: 'mine', model_id: own, args: {} });
    expect(res.status).toBe(403);
    expect(res.body.error.message).toMatch(/LOCAL_EXECUTOR_TRUST/);
    // The operator's model runs for anyone.
    const { jobId } = await deploy(t, alice, await programModel('argv'), {});
    expect((await waitForJob(t, alice, jobId)).status).toBe('SUCCEEDED');
  });
});

describe('commands never pass through a shell', () => {
  it('hands hostile values to the program as single literal arguments', async () => {
    const modelId = await programModel('argv', {
      a: { type: 'string', format: ':value' },
      b: { type: 'string', format: '--b=:value' },
      c: { type: 'string', format: '-c :value' },
    });
    const marker = path.join(t.config.dataDir, 'pwned');
    const hostile = {
      a: `; touch ${marker}`,
      b: `$(touch ${marker}) \`touch ${marker}\``,
      c: `-rf\nsecond line | touch ${marker} && echo {args}`,
    };
    const { jobId } = await deploy(t, alice, modelId, hostile);
    const job = await waitForJob(t, alice, jobId);
    expect(job.status).toBe('SUCCEEDED');
    expect(job.result).toEqual([hostile.a, `--b=${hostile.b}`, '-c', hostile.c]);
    expect(job.command.slice(-4)).toEqual([hostile.a, `--b=${hostile.b}`, '-c', hostile.c]);
    expect(existsSync(marker)).toBe(false);
  });

  it('gives the program a clean environment, and keeps only regular output files', async () => {
    const { jobId } = await deploy(t, alice, await programModel('outputs'), {});
    const job = await waitForJob(t, alice, jobId);
    expect(job.status).toBe('SUCCEEDED');
    const { env } = job.result as { env: string[] };
    expect(env).toEqual(['HOME', 'LANG', 'MEDIA_JOB_ID', 'OUTPUT_DIR', 'PATH', 'TMPDIR']);
    // The symlink to /etc/passwd was not taken; files come in name order, sub-folders included.
    expect(job.resultUrls).toHaveLength(2);
    const outputs = await t.gql(
      'query ($id: ID!) { job(id: $id) { outputs { imageName contentType type } } }',
      { id: jobId },
      alice,
    );
    expect(outputs.body.data.job.outputs).toEqual([
      { imageName: 'a-first.txt', contentType: 'text/plain; charset=utf-8', type: 'TARGET_ASSET' },
      { imageName: 'sub/second.csv', contentType: 'text/csv; charset=utf-8', type: 'TARGET_ASSET' },
    ]);
  });

  it('fails a job whose program exits non-zero, keeping what it printed', async () => {
    const { jobId } = await deploy(
      t,
      alice,
      await programModel('fail', {}, { command: `node "${PROGRAM}" fail 3 {args}` }),
      {},
    );
    const job = await waitForJob(t, alice, jobId);
    expect(job).toMatchObject({ status: 'FAILED', exitCode: 3, error: 'the program exited with code 3' });
    expect(job.logTail).toContain('something went wrong');
    expect(job.resultUrls).toEqual([]);
  });
});

describe('live subscriptions', () => {
  it('show every state of a job in order, on `jobs` and on `jobUpdated`', async () => {
    const modelId = await programModel('lines', {}, { command: `node "${PROGRAM}" lines 3 20 {args}` });
    const client = connect(alice);
    try {
      const all = collect<{ jobs: { id: string; status: string } }>(
        client,
        'subscription { jobs { id status } }',
        {},
        (e) => e.some((x) => x.jobs.status === 'SUCCEEDED'),
      );
      await new Promise((r) => setTimeout(r, 200)); // the subscription is registered
      const { jobId } = await deploy(t, alice, modelId, {});
      const one = collect<{ jobUpdated: { status: string; logTail: string } }>(
        client,
        'subscription ($id: ID!) { jobUpdated(id: $id) { status logTail } }',
        { id: jobId },
        (e) => e.some((x) => x.jobUpdated.status === 'SUCCEEDED'),
      );
      const seen = (await all.done).filter((e) => e.jobs.id === jobId).map((e) => e.jobs.status);
      expect(seen).toEqual(['QUEUED', 'STARTING', 'RUNNING', 'SUCCEEDED']);
      const updates = (await one.done).map((e) => e.jobUpdated.status);
      // Its current state first, then each later transition once: a tail of the full sequence.
      const sequence = ['QUEUED', 'STARTING', 'RUNNING', 'SUCCEEDED'];
      expect(updates).toEqual(sequence.slice(sequence.length - updates.length));
      expect((await one.done).at(-1)!.jobUpdated.logTail).toBe('line 1\nline 2\nline 3');
      const transitions = await t.gql(
        'query ($id: ID!) { job(id: $id) { transitions { from to at } } }',
        { id: jobId },
        alice,
      );
      expect(
        transitions.body.data.job.transitions.map((x: { from: string; to: string }) => [x.from, x.to]),
      ).toEqual([
        [null, 'QUEUED'],
        ['QUEUED', 'STARTING'],
        ['STARTING', 'RUNNING'],
        ['RUNNING', 'SUCCEEDED'],
      ]);
    } finally {
      await client.dispose();
    }
  });

  it('stream the lines a job prints', async () => {
    const modelId = await programModel('lines', {}, { command: `node "${PROGRAM}" lines 5 150 {args}` });
    const client = connect(alice);
    try {
      const { jobId } = await deploy(t, alice, modelId, {});
      const logs = collect<{ jobLogs: { stream: string; line: string } }>(
        client,
        'subscription ($id: ID!) { jobLogs(id: $id) { stream line } }',
        { id: jobId },
        (e) => e.some((x) => x.jobLogs.line === 'line 5'),
      );
      const lines = await logs.done;
      // Lines printed before the subscription began are in logTail; the rest arrive in order.
      const texts = lines.map((l) => l.jobLogs.line);
      expect(texts.at(-1)).toBe('line 5');
      expect(texts).toEqual([...texts].sort());
      expect(lines.every((l) => l.jobLogs.stream === 'STDOUT')).toBe(true);
    } finally {
      await client.dispose();
    }
  });

  it("never show another owner's jobs", async () => {
    const modelId = await programModel('argv');
    const client = connect(bob);
    try {
      const bobs = collect<{ jobs: { id: string } }>(client, 'subscription { jobs { id } }', {}, () => false);
      await new Promise((r) => setTimeout(r, 200));
      const { jobId } = await deploy(t, alice, modelId, {});
      await waitForJob(t, alice, jobId);
      const foreign = collect(
        client,
        'subscription ($id: ID!) { jobUpdated(id: $id) { id } }',
        { id: jobId },
        () => true,
      );
      await foreign.done;
      expect(foreign.events).toEqual([]);
      expect(JSON.stringify(foreign.errors)).toMatch(/not found/);
      const logs = collect(
        client,
        'subscription ($id: ID!) { jobLogs(id: $id) { line } }',
        { id: jobId },
        () => true,
      );
      await logs.done;
      expect(JSON.stringify(logs.errors)).toMatch(/not found/);
      expect(bobs.events.filter((e) => e.jobs.id === jobId)).toEqual([]);
      bobs.dispose();
    } finally {
      await client.dispose();
    }
  });
});

describe('cancel and timeout', () => {
  it('stops a running job: state canceled, its process gone; canceling again answers it as it is', async () => {
    const { jobId } = await deploy(t, alice, await programModel('idle'), {});
    const client = connect(alice);
    let pid: number;
    try {
      const logs = collect<{ jobLogs: { line: string } }>(
        client,
        'subscription ($id: ID!) { jobLogs(id: $id) { line } }',
        { id: jobId },
        (e) => e.length > 0,
      );
      pid = Number(/^idle (\d+)$/.exec((await logs.done)[0].jobLogs.line)![1]);
    } finally {
      await client.dispose();
    }
    expect(alive(pid)).toBe(true);
    expect(String(pid)).toBe((await jobOf(t, alice, jobId)).externalId);
    const res = await t.http().post(`/api/v1/jobs/${jobId}/cancel`).set('authorization', alice);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: jobId, status: 'canceled' });
    expect(
      await until(
        async () => alive(pid),
        (a) => !a,
      ),
    ).toBe(false);
    // What it printed is kept with it.
    const job = await waitForJob(t, alice, jobId, (j) => j.logTail.includes('idle'));
    expect(job.status).toBe('CANCELED');
    expect(job.runSeconds).toBeGreaterThan(0);
    const again = await t.gql(
      'mutation ($id: ID!) { cancelJob(id: $id) { status finishedAt } }',
      { id: jobId },
      alice,
    );
    expect(again.body.data.cancelJob).toEqual({ status: 'CANCELED', finishedAt: job.finishedAt });
  });

  it('cancels a queued job before it ever runs', async () => {
    const idle = await programModel('idle');
    // Two jobs fill both slots; the third waits in the queue.
    const busy = [await deploy(t, alice, idle, {}), await deploy(t, alice, idle, {})];
    for (const b of busy) await waitForJob(t, alice, b.jobId, (j) => j.status === 'RUNNING');
    const { jobId } = await deploy(t, alice, idle, {});
    expect((await jobOf(t, alice, jobId)).status).toBe('QUEUED');
    const res = await t.gql(
      'mutation ($id: ID!) { cancelJob(id: $id) { status startedAt runSeconds } }',
      { id: jobId },
      alice,
    );
    expect(res.body.data.cancelJob).toEqual({ status: 'CANCELED', startedAt: null, runSeconds: null });
    for (const b of busy)
      await t.gql('mutation ($id: ID!) { cancelJob(id: $id) { id } }', { id: b.jobId }, alice);
    await new Promise((r) => setTimeout(r, 500));
    const job = await jobOf(t, alice, jobId);
    expect(job).toMatchObject({ status: 'CANCELED', startedAt: null, externalId: null });
  });

  it('kills the whole process group at the timeout', async () => {
    const modelId = await programModel('tree', {}, { timeout_seconds: 2 });
    const client = connect(alice);
    try {
      const { jobId } = await deploy(t, alice, modelId, {});
      const logs = collect<{ jobLogs: { line: string } }>(
        client,
        'subscription ($id: ID!) { jobLogs(id: $id) { line } }',
        { id: jobId },
        (e) => e.length > 0,
      );
      const [first] = await logs.done;
      const { parent, child } = JSON.parse(first.jobLogs.line) as { parent: number; child: number };
      // The program's own child is in its process group, and alive while the job runs.
      expect(alive(child)).toBe(true);
      const job = await waitForJob(t, alice, jobId);
      expect(job).toMatchObject({
        status: 'FAILED',
        error: 'timed out after 2 s; its processes were stopped',
      });
      expect(alive(parent)).toBe(false);
      expect(
        await until(
          async () => alive(child),
          (a) => !a,
        ),
      ).toBe(false);
    } finally {
      await client.dispose();
    }
  });
});

describe('dispatch', () => {
  /** The job's worker and how many dispatch tasks the queue holds for it. */
  async function dispatchOf(jobId: string): Promise<{ workerId: string | null; tasks: number }> {
    const em = t.runtime.orm.em.fork();
    const [job] = await em.execute('select worker_id from jobs where id = ?', [jobId]);
    const [{ n }] = await em.execute(
      `select count(*)::int as n from graphile_worker._private_jobs j
       join graphile_worker._private_tasks k on k.id = j.task_id
       where k.identifier = 'dispatch_job' and j.payload->>'jobId' = ?`,
      [jobId],
    );
    return { workerId: job.worker_id, tasks: n };
  }

  async function create(modelId: string): Promise<{ id: string; status: string }> {
    const res = await t.gql(
      'mutation ($input: CreateDeploymentInput!) { createDeployment(input: $input) { job { id status } } }',
      { input: { name: 'dispatch', modelId, args: {} } },
      alice,
    );
    expect(res.body.errors).toBeUndefined();
    return res.body.data.createDeployment.job;
  }

  const cancel = (id: string) => t.gql('mutation ($id: ID!) { cancelJob(id: $id) { id } }', { id }, alice);

  it('claims a job in its creating statement while a slot is free, showing every state in order', async () => {
    const idle = await programModel('idle');
    const client = connect(alice);
    try {
      const all = collect<{ jobs: { id: string; status: string } }>(
        client,
        'subscription { jobs { id status } }',
        {},
        (e) => e.some((x) => x.jobs.status === 'RUNNING'),
      );
      await new Promise((r) => setTimeout(r, 200)); // the subscription is registered
      const job = await create(idle);
      // Claimed by this process's worker as it was created: no task went through the queue.
      expect(job.status).toBe('STARTING');
      expect(await dispatchOf(job.id)).toEqual({ workerId: t.runtime.runner!.instanceId, tasks: 0 });
      const seen = (await all.done).filter((e) => e.jobs.id === job.id).map((e) => e.jobs.status);
      expect(seen).toEqual(['QUEUED', 'STARTING', 'RUNNING']);
      const transitions = await t.gql(
        'query ($id: ID!) { job(id: $id) { transitions { from to } } }',
        { id: job.id },
        alice,
      );
      expect(transitions.body.data.job.transitions).toEqual([
        { from: null, to: 'QUEUED' },
        { from: 'QUEUED', to: 'STARTING' },
        { from: 'STARTING', to: 'RUNNING' },
      ]);
      // Still a job like any other: the queue's task never comes, and canceling stops it.
      await cancel(job.id);
      expect((await waitForJob(t, alice, job.id)).status).toBe('CANCELED');
    } finally {
      await client.dispose();
    }
  });

  it("takes a new owner's first deployments all at once: none meets another in a deadlock", async () => {
    // A new owner has no usage row yet: the creations that claim a slot and those that queue
    // both make it, and must do so before they count the model's run, or two of them each hold
    // what the other waits for (PostgreSQL then aborts one: 503 "met a concurrent one").
    const quick = await programModel('argv');
    const failures: unknown[] = [];
    for (let owner = 0; owner < 8; owner++) {
      const auth = `Bearer ${await t.tokenFor(`burst-${owner}`)}`;
      const answers = await Promise.all(
        Array.from({ length: 12 }, () =>
          t.gql(
            'mutation ($input: CreateDeploymentInput!) { createDeployment(input: $input) { job { id } } }',
            { input: { name: 'burst', modelId: quick, args: {} } },
            auth,
          ),
        ),
      );
      failures.push(...answers.filter((a) => a.body.errors).map((a) => a.body.errors));
      const jobs = answers.filter((a) => !a.body.errors).map((a) => a.body.data.createDeployment.job.id);
      for (const id of jobs) await waitForJob(t, auth, id);
    }
    expect(failures).toEqual([]);
  }, 120_000);

  it('queues a job when no slot is free, or while others are queued; each runs once a slot frees', async () => {
    const idle = await programModel('idle');
    const busy = [await create(idle), await create(idle)];
    for (const b of busy) await waitForJob(t, alice, b.id, (j) => j.status === 'RUNNING');
    const client = connect(alice);
    const em = t.runtime.orm.em.fork();
    try {
      const last = { id: '' };
      const all = collect<{ jobs: { id: string; status: string } }>(
        client,
        'subscription { jobs { id status } }',
        {},
        // Until the last job of the test runs (the others ran before it); counting RUNNING events
        // could end early on one of another job of the owner.
        (e) => e.some((x) => x.jobs.id === last.id && x.jobs.status === 'RUNNING'),
      );
      await new Promise((r) => setTimeout(r, 200)); // the subscription is registered
      // Both slots are taken: queued, with its dispatch task.
      const queued = await create(idle);
      expect(queued.status).toBe('QUEUED');
      expect(await dispatchOf(queued.id)).toEqual({ workerId: null, tasks: 1 });
      // A slot frees: the queued job takes it, through the queue.
      await cancel(busy[0].id);
      await waitForJob(t, alice, queued.id, (j) => j.status === 'RUNNING');
      expect((await dispatchOf(queued.id)).workerId).toBe(t.runtime.runner!.instanceId);
      // A slot is free, but an older job of the same owner waits in the queue (here one without
      // a task of its own): a new job queues behind it rather than taking the slot first, and
      // the new job's task claims the older one (a task takes the best job, not its own).
      await cancel(busy[1].id);
      await waitForJob(t, alice, busy[1].id, (j) => j.status === 'CANCELED');
      const [{ id: stray }] = await em.execute<{ id: string }[]>(
        `insert into jobs (id, deployment_id, model_id, owner_type, owner_id, status, executor, argv, inputs,
                           container, machine_type, machine_count, timeout_seconds, log_tail, created_at, updated_at)
         select gen_random_uuid(), deployment_id, model_id, owner_type, owner_id, 'queued', executor, argv, inputs,
                container, machine_type, machine_count, timeout_seconds, '', now(), now()
         from jobs where id = ? returning id`,
        [queued.id],
      );
      const next = await create(idle);
      last.id = next.id;
      expect(next.status).toBe('QUEUED');
      await waitForJob(t, alice, stray, (j) => j.status === 'RUNNING');
      expect((await jobOf(t, alice, next.id)).status).toBe('QUEUED');
      // The older one's end frees the slot and queues the task that takes the new one.
      await cancel(stray);
      await waitForJob(t, alice, next.id, (j) => j.status === 'RUNNING');
      const seen = await all.done;
      for (const id of [queued.id, next.id])
        expect(seen.filter((e) => e.jobs.id === id).map((e) => e.jobs.status)).toEqual([
          'QUEUED',
          'STARTING',
          'RUNNING',
        ]);
      for (const j of [queued, next]) await cancel(j.id);
      for (const j of [queued, next]) expect((await waitForJob(t, alice, j.id)).status).toBe('CANCELED');
    } finally {
      // Nothing of this test holds a slot for the next ones, whatever failed.
      const left = await em.execute<{ id: string }[]>(
        `select id from jobs where status in ('queued', 'starting', 'running')`,
      );
      for (const { id } of left) await cancel(id);
      await client.dispose();
    }
  }, 120_000);
});

describe('resilience', () => {
  it('releases the event listeners of subscriptions that end or are dropped', async () => {
    const modelId = await programModel('argv');
    const { jobId } = await deploy(t, alice, modelId, {});
    await waitForJob(t, alice, jobId);
    const live = t.runtime.services.live;
    const before = live.subscriberCount();
    const client = connect(alice);
    try {
      for (let i = 0; i < 5; i++) {
        // A finished job: its state, then the subscription completes by itself.
        const done = collect(
          client,
          'subscription ($id: ID!) { jobUpdated(id: $id) { status } }',
          { id: jobId },
          () => false,
        );
        expect((await done.done).length).toBe(1);
        // Dropped by the client while nothing is happening.
        const all = collect(client, 'subscription { jobs { id } }', {}, () => false);
        const logs = collect(
          client,
          'subscription ($id: ID!) { jobLogs(id: $id) { line } }',
          { id: jobId },
          () => false,
        );
        await until(
          async () => live.subscriberCount(),
          (n) => n > before,
        );
        all.dispose();
        logs.dispose();
      }
      expect(
        await until(
          async () => live.subscriberCount(),
          (n) => n === before,
        ),
      ).toBe(before);
    } finally {
      await client.dispose();
    }
  });

  it('fails a job whose launcher dies, and starts a new launcher for the next job', async () => {
    const { jobId } = await deploy(t, alice, await programModel('idle'), {});
    const running = await waitForJob(t, alice, jobId, (j) => j.status === 'RUNNING');
    const pid = Number(running.externalId);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const launcher = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    process.kill(launcher, 'SIGKILL');
    const job = await waitForJob(t, alice, jobId);
    expect(job).toMatchObject({
      status: 'FAILED',
      error: 'the executor lost track of the job; its processes were stopped',
    });
    expect(
      await until(
        async () => alive(pid),
        (a) => !a,
      ),
    ).toBe(false);
    const next = await deploy(t, alice, await programModel('argv'), {});
    expect((await waitForJob(t, alice, next.jobId)).status).toBe('SUCCEEDED');
  });

  it('registers the worker again when its registration disappears, and keeps running its jobs', async () => {
    const em = t.runtime.orm.em.fork();
    const { jobId } = await deploy(t, alice, await programModel('idle'), {});
    await waitForJob(t, alice, jobId, (j) => j.status === 'RUNNING');
    await em.getConnection().execute('delete from worker_instances');
    await t.runtime.runner!.reconcile();
    expect((await jobOf(t, alice, jobId)).status).toBe('RUNNING');
    const back = await until(
      () => t.runtime.orm.em.fork().getConnection().execute('select id from worker_instances'),
      (rows) => rows.length === 1,
      15000,
    );
    expect(back[0].id).toBe(t.runtime.runner!.instanceId);
    await t.gql('mutation ($id: ID!) { cancelJob(id: $id) { id } }', { id: jobId }, alice);
  });
});

describe('reading and tenancy', () => {
  it("answers 404 for another owner's jobs and deployments, everywhere", async () => {
    const { id, jobId } = await deploy(t, alice, await programModel('argv'), {});
    await waitForJob(t, alice, jobId);
    for (const url of [`/api/v1/jobs/${jobId}`, `/api/v1/deployments/${id}`]) {
      const res = await t.http().get(url).set('authorization', bob);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
    expect((await t.http().post(`/api/v1/jobs/${jobId}/cancel`).set('authorization', bob)).status).toBe(404);
    const gql = await t.gql('query ($id: ID!) { job(id: $id) { id } }', { id: jobId }, bob);
    expect(gql.body.errors[0].extensions.code).toBe('NOT_FOUND');
    const bobsJobs = await t.http().get('/api/v1/jobs').set('authorization', bob);
    expect(bobsJobs.body.map((j: { id: string }) => j.id)).not.toContain(jobId);
    expect((await t.http().get('/api/v1/jobs/not-a-uuid').set('authorization', alice)).status).toBe(404);
  });

  it('filters and pages jobs over REST, with the same data as GraphQL', async () => {
    const modelId = await programModel('argv');
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await deploy(t, bob, modelId, {})).jobId);
    for (const id of ids) await waitForJob(t, bob, id);
    const first = await t
      .http()
      .get(`/api/v1/jobs?model_id=${modelId}&status=succeeded&limit=2`)
      .set('authorization', bob);
    expect(first.body.map((j: { id: string }) => j.id)).toEqual([ids[2], ids[1]]);
    const next = /<([^>]+)>; rel="next"/.exec(first.headers.link)![1];
    const second = await t.http().get(next).set('authorization', bob);
    expect(second.body.map((j: { id: string }) => j.id)).toEqual([ids[0]]);
    const gql = await t.gql(
      'query ($m: ID!) { jobs(filter: { modelId: $m, status: SUCCEEDED }) { nodes { id status runSeconds resultUrls } } }',
      { m: modelId },
      bob,
    );
    expect(
      gql.body.data.jobs.nodes.map((n: { id: string; runSeconds: number }) => [n.id, n.runSeconds]),
    ).toEqual(
      [...first.body, ...second.body].map((j: { id: string; run_seconds: number }) => [j.id, j.run_seconds]),
    );
    const bad = await t.http().get('/api/v1/jobs?status=sleeping').set('authorization', bob);
    expect(bad.status).toBe(400);
    const deployments = await t.http().get('/api/v1/deployments?limit=1').set('authorization', bob);
    expect(deployments.body).toHaveLength(1);
    expect(deployments.body[0].job.id).toBe(ids[2]);
  });

  it('lists 100 jobs with their model, deployment and outputs in a constant number of statements', async () => {
    const owner = `Bearer ${await t.tokenFor('many')}`;
    const modelId = await programModel('argv');
    const { jobId } = await deploy(t, owner, modelId, {});
    await waitForJob(t, owner, jobId);
    const em = t.runtime.orm.em.fork();
    // 120 more finished jobs, copied from the real one (running them would only be slow).
    await em.getConnection().execute(
      `with d as (insert into deployments (id, owner_type, owner_id, name, model_id, args, target_asset_id, created_at)
                  select gen_random_uuid(), owner_type, owner_id, 'copy ' || i, model_id, '{}', gen_random_uuid(), now() - i * interval '1 ms'
                  from deployments, generate_series(1, 120) i where id = (select deployment_id from jobs where id = '${jobId}')
                  returning id, owner_type, owner_id, model_id, created_at)
       insert into jobs (id, deployment_id, model_id, owner_type, owner_id, status, executor, argv, container, machine_type,
                         machine_count, timeout_seconds, created_at, updated_at)
       select gen_random_uuid(), id, model_id, owner_type, owner_id, 'succeeded', 'local', '[]', 'local', 'cpu', 1, 60, created_at, created_at from d`,
    );
    const query =
      'query ($n: Int!) { jobs(first: $n) { nodes { id status model { id name likeCount } deployment { id name targetAssetId } outputs { id url } transitions { to } } } }';
    // An API-only instance on the same database: only the request's own statements are recorded.
    const reader = await startTestApp(
      { ROLES: 'api' },
      { databaseUrl: t.databaseUrl, issuer: t.issuer, onQuery: (sql) => recording?.push(sql) },
    );
    const statementsFor = async (n: number) => {
      recording = [];
      const res = await reader.gql(query, { n }, owner);
      const statements = recording;
      recording = undefined;
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data.jobs.nodes).toHaveLength(n);
      return statements.length;
    };
    try {
      await reader.gql('{ me { id } }', {}, owner); // the user lookup of a first request is not the list's
      const ten = await statementsFor(10);
      expect(await statementsFor(100)).toBe(ten);
      expect(ten).toBeLessThanOrEqual(8);
    } finally {
      await reader.close();
    }
  });

  it('reads only the columns a list asks for, and answers every field as the full read does', async () => {
    const owner = `Bearer ${await t.tokenFor('narrow')}`;
    const modelId = await programModel('argv', { word: { type: 'string', format: ':value' } });
    const { jobId } = await deploy(t, owner, modelId, { word: 'hi' });
    await waitForJob(t, owner, jobId);
    const reader = await startTestApp(
      { ROLES: 'api' },
      { databaseUrl: t.databaseUrl, issuer: t.issuer, onQuery: (sql) => recording?.push(sql) },
    );
    try {
      await reader.gql('{ me { id } }', {}, owner);
      recording = [];
      const narrow = await reader.gql(
        '{ jobs(first: 5) { nodes { id status command model { id name } deployment { id name } } } }',
        {},
        owner,
      );
      const statements = recording;
      recording = undefined;
      expect(narrow.body.errors).toBeUndefined();
      const list = statements.find((sql) => / from jobs j /.test(sql));
      // The model's arguments and the job's log tail were not asked for, so not read.
      expect(list).toMatch(/m\.name/);
      expect(list).not.toMatch(/m\.args|log_tail|d\.args/);
      // Everything asked for of each kind, listed and read in full; the model also through a
      // loader in the same request, which the list's partial rows must not have reached.
      const full = await reader.gql(
        `query ($m: ID!) {
           jobs(first: 5) { nodes { id status command model { id name args { name } } deployment { id name args } } }
           model(id: $m) { id name args { name } }
         }`,
        { m: modelId },
        owner,
      );
      expect(full.body.errors).toBeUndefined();
      const [job] = full.body.data.jobs.nodes;
      expect(job.model.args).toEqual([{ name: 'word' }]);
      expect(job.deployment.args).toEqual({ word: 'hi' });
      expect(full.body.data.model.args).toEqual([{ name: 'word' }]);
      expect(narrow.body.data.jobs.nodes).toEqual([
        {
          id: job.id,
          status: job.status,
          command: job.command,
          model: { id: modelId, name: job.model.name },
          deployment: { id: job.deployment.id, name: job.deployment.name },
        },
      ]);
      const mixed = await reader.gql(
        `query ($m: ID!) { jobs(first: 5) { nodes { model { id } } } model(id: $m) { args { name } } }`,
        { m: modelId },
        owner,
      );
      expect(mixed.body.data.model.args).toEqual([{ name: 'word' }]);
    } finally {
      await reader.close();
    }
  });
});

describe('the demo models', () => {
  it('make a thumbnail of an uploaded image', async () => {
    const image = await sharp({ create: { width: 640, height: 480, channels: 3, background: '#3366cc' } })
      .png()
      .toBuffer();
    const media = (await uploadFile(t, alice, image, 'photo.png')).body.media.id;
    const { jobId, targetAssetId } = await deploy(t, alice, BUILTIN.thumbnail, {
      image: media,
      width: 64,
      format: 'webp',
    });
    const job = await waitForJob(t, alice, jobId);
    expect(job).toMatchObject({ status: 'SUCCEEDED', result: { width: 64, height: 48, format: 'webp' } });
    expect(job.resultUrls).toEqual([expect.stringContaining(`/media/${targetAssetId}.webp`)]);
    const file = await t.http().get(new URL(job.resultUrls[0]).pathname).buffer(true);
    expect(file.headers['content-type']).toBe('image/webp');
    const meta = await sharp(file.body as Buffer).metadata();
    expect([meta.width, meta.height]).toEqual([64, 48]);
  });

  it('read the text in an image', async () => {
    const image = await sharp({
      text: { text: '<span foreground="black">HELLO MEDIA 42</span>', rgba: true, dpi: 300 },
    })
      .flatten({ background: '#ffffff' })
      .extend({ top: 20, bottom: 20, left: 20, right: 20, background: '#ffffff' })
      .png()
      .toBuffer();
    const media = (await uploadFile(t, alice, image, 'text.png')).body.media.id;
    const { jobId } = await deploy(t, alice, BUILTIN.ocr, { image: media });
    const job = await waitForJob(t, alice, jobId);
    expect(job.status).toBe('SUCCEEDED');
    expect((job.result as { text: string }).text).toContain('HELLO MEDIA 42');
    const text = await t.http().get(new URL(job.resultUrls[0]).pathname);
    expect(text.text).toContain('HELLO MEDIA 42');
  });

  it('leave no work directory behind', async () => {
    const left = await until(
      async () => readdirSync(path.join(t.config.dataDir, 'jobs')),
      (d) => d.length === 0,
    );
    expect(left).toEqual([]);
  });
});
