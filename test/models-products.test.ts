import { Client } from 'pg';
import { User } from '../src/users/user.entity';
import { entities } from '../src/server/entities';
import { openOrm } from '../src/db/orm';
import { BUILTIN, PROGRAM, deploy, waitForJob } from './helpers/jobs';
import { createTestDatabase } from './helpers/db';
import { startTestApp, type TestApp } from './helpers/app';

/**
 * Models as products (issue 32), the model side: private models and sharing with teams, and
 * immutable versions. Secrets are test/secrets.test.ts.
 */
let t: TestApp;
let alice: string;
let bob: string;
/** Team keys (role member): Alice's team A, Bob's team B. */
let teamA: string;
let teamB: string;
let teamBId: string;
/** Alice acting for team A as its owner (the web app's session token). */
let ownerA: string;
/** A viewer key of team A. */
let viewerA: string;

async function team(owner: string, sub: string, name: string) {
  const created = await t.http().post('/api/v1/teams').set('authorization', owner).send({ name });
  const key = async (role: string) => {
    const res = await t
      .http()
      .post('/api/v1/tokens')
      .set('authorization', owner)
      .send({ name: 'team', team_id: created.body.id, role });
    return `Bearer ${res.body.token}`;
  };
  const user = await t.runtime.orm.em.fork().findOneOrFail(User, { subject: sub });
  const cookie = await t.runtime.services.sessions.open(user, null);
  const session = await t.runtime.services.login.sessionToken({ cookie, teamId: created.body.id });
  return {
    id: created.body.id as string,
    member: await key('member'),
    viewer: await key('viewer'),
    owner: `Bearer ${session.accessToken}`,
  };
}

beforeAll(async () => {
  t = await startTestApp({ LOCAL_EXECUTOR_TRUST: 'any' });
  alice = `Bearer ${await t.tokenFor('products-alice')}`;
  bob = `Bearer ${await t.tokenFor('products-bob')}`;
  const a = await team(alice, 'products-alice', 'Team A');
  teamA = a.member;
  ownerA = a.owner;
  viewerA = a.viewer;
  const b = await team(bob, 'products-bob', 'Team B');
  teamB = b.member;
  teamBId = b.id;
});
afterAll(() => t.close());

const program = {
  name: 'Echo',
  container: 'local',
  command: `node "${PROGRAM}" argv {args}`,
  args: { word: { type: 'string', format: '--word=:value', optional: true } },
};

async function createModel(auth: string, more: Record<string, unknown> = {}): Promise<string> {
  const res = await t
    .http()
    .post('/api/v1/models')
    .set('authorization', auth)
    .send({ ...program, ...more });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}

const put = (auth: string, id: string, body: Record<string, unknown>) =>
  t.http().put(`/api/v1/models/${id}`).set('authorization', auth).send(body);

async function gqlModel(auth: string, id: string, fields = 'id visibility secrets sharedWith') {
  return t.gql(`query ($id: ID!) { model(id: $id) { ${fields} } }`, { id }, auth);
}

async function listedIds(auth: string): Promise<string[]> {
  const res = await t.http().get('/api/v1/models?limit=200').set('authorization', auth);
  expect(res.status).toBe(200);
  return res.body.map((m: { id: string }) => m.id);
}

const LEGACY_KEYS = [
  'args',
  'black_icon',
  'classification',
  'color_icon',
  'example_outputs',
  'id',
  'name',
  'run_count',
  'tags',
  'updated_at',
  'version',
  'white_icon',
];

describe('visibility', () => {
  it('keeps a model created without visibility public, and the legacy record as it was', async () => {
    const id = await createModel(alice);
    const res = await t.http().get(`/api/v1/models/${id}`).set('authorization', bob);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(LEGACY_KEYS);
    expect((await gqlModel(bob, id)).body.data.model).toMatchObject({ visibility: 'public' });
    expect(await listedIds(teamB)).toContain(id);
  });

  it('answers a private model to its owner only, and 404 to everybody else, everywhere', async () => {
    const id = await createModel(alice, { visibility: 'private' });
    const created = await t.http().get(`/api/v1/models/${id}`).set('authorization', alice);
    expect(created.status).toBe(200);
    expect(Object.keys(created.body).sort()).toEqual(LEGACY_KEYS);
    expect((await gqlModel(alice, id)).body.data.model).toMatchObject({
      visibility: 'private',
      sharedWith: [],
    });
    expect(await listedIds(alice)).toContain(id);
    const mine = await t.gql('{ models(filter: { mine: true }) { nodes { id } } }', {}, alice);
    expect(mine.body.data.models.nodes.map((m: { id: string }) => m.id)).toContain(id);
    const [version] = (await t.http().get(`/api/v1/models/${id}/versions`).set('authorization', alice)).body;

    // Another user, another user's team, and Alice's own team (a team token is not its user).
    for (const other of [bob, teamB, teamA]) {
      for (const [method, path, body] of [
        ['get', `/api/v1/models/${id}`],
        ['put', `/api/v1/models/${id}`, { name: 'taken over' }],
        ['delete', `/api/v1/models/${id}`],
        ['patch', `/api/v1/models/${id}/like`],
        ['patch', `/api/v1/models/${id}/unlike`],
        ['patch', `/api/v1/models/${id}/follow`],
        ['patch', `/api/v1/models/${id}/unfollow`],
        ['get', `/api/v1/models/${id}/versions`],
        ['get', `/api/v1/models/${id}/versions/${version.id}`],
        ['post', '/api/v1/deployments', { name: 'run', model_id: id, args: {} }],
      ] as const) {
        const req = t.http()[method](path).set('authorization', other);
        const res = await (body ? req.send(body) : req);
        expect([method, path, res.status, res.body.error?.code]).toEqual([method, path, 404, 'NOT_FOUND']);
      }
      expect(await listedIds(other)).not.toContain(id);
      const gql = await gqlModel(other, id);
      expect(gql.body.errors[0].extensions.code).toBe('NOT_FOUND');
      const version1 = await t.gql(
        'query ($m: ID!, $v: ID!) { modelVersion(modelId: $m, id: $v) { id } }',
        { m: id, v: version.id },
        other,
      );
      expect(version1.body.errors[0].extensions.code).toBe('NOT_FOUND');
    }
    // Nothing was changed by those attempts.
    const after = await t.http().get(`/api/v1/models/${id}`).set('authorization', alice);
    expect(after.body.name).toBe('Echo');
    const likes = await gqlModel(alice, id, 'likeCount followCount');
    expect(likes.body.data.model).toEqual({ likeCount: 0, followCount: 0 });
  });

  it('hides a model made private from the jobs, deployments and likes of others that name it', async () => {
    const id = await createModel(alice);
    expect((await t.http().patch(`/api/v1/models/${id}/like`).set('authorization', bob)).status).toBe(200);
    const bobs = await deploy(t, bob, id, {});
    const alices = await deploy(t, alice, id, {});
    const query = `query ($job: ID!, $deployment: ID!) {
      job(id: $job) { model { id name } deployment { model { id } } }
      deployment(id: $deployment) { model { id } }
      jobs(first: 50) { nodes { id model { id name container } } }
      likedModels { nodes { id } }
    }`;
    await waitForJob(t, bob, bobs.jobId);
    const usage = async () => {
      const res = await t.gql('{ usage { models { modelId name } } }', {}, bob);
      return res.body.data.usage.models.find((m: { modelId: string }) => m.modelId === id);
    };
    expect(await usage()).toEqual({ modelId: id, name: 'Echo' });
    const before = await t.gql(query, { job: bobs.jobId, deployment: bobs.id }, bob);
    expect(before.body.data.job.model).toEqual({ id, name: 'Echo' });
    expect(before.body.data.likedModels.nodes).toEqual([{ id }]);

    expect((await put(alice, id, { visibility: 'private' })).status).toBe(200);
    const after = await t.gql(query, { job: bobs.jobId, deployment: bobs.id }, bob);
    expect(after.body.errors).toBeUndefined();
    expect(after.body.data.job).toEqual({ model: null, deployment: { model: null } });
    expect(after.body.data.deployment).toEqual({ model: null });
    const listed = after.body.data.jobs.nodes.find((j: { id: string }) => j.id === bobs.jobId);
    expect(listed).toEqual({ id: bobs.jobId, model: null });
    expect(after.body.data.likedModels.nodes).toEqual([]);
    // Bob's bill still counts his job, without the model's name.
    expect(await usage()).toEqual({ modelId: id, name: null });
    // The owner still sees it through her own job.
    const own = await t.gql(query, { job: alices.jobId, deployment: alices.id }, alice);
    expect(own.body.data.job.model).toEqual({ id, name: 'Echo' });
    // And Bob can no longer run it.
    const again = await t
      .http()
      .post('/api/v1/deployments')
      .set('authorization', bob)
      .send({ name: 'again', model_id: id, args: {} });
    expect(again.status).toBe(404);
  });

  it('refuses a visibility other than public or private, changing nothing', async () => {
    const res = await t
      .http()
      .post('/api/v1/models')
      .set('authorization', alice)
      .send({ ...program, visibility: 'hidden' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { visibility: 'must be one of public, private' },
    });
  });
});

describe('sharing', () => {
  it('lets the teams a private model is shared with see and run it, never change it', async () => {
    const id = await createModel(teamA, { visibility: 'private', shared_with: [teamBId] });
    // Team B sees it, in lists too, and runs it; its sharing list is not shown to it.
    expect((await t.http().get(`/api/v1/models/${id}`).set('authorization', teamB)).status).toBe(200);
    expect(await listedIds(teamB)).toContain(id);
    expect((await gqlModel(teamB, id)).body.data.model).toMatchObject({
      visibility: 'private',
      sharedWith: null,
    });
    expect((await gqlModel(ownerA, id)).body.data.model.sharedWith).toEqual([teamBId]);
    const run = await t
      .http()
      .post('/api/v1/deployments')
      .set('authorization', teamB)
      .send({ name: 'shared run', model_id: id, args: {} });
    expect(run.status).toBe(201);
    for (const res of [
      await put(teamB, id, { name: 'mine now' }),
      await put(teamB, id, { shared_with: [] }),
      await t.http().delete(`/api/v1/models/${id}`).set('authorization', teamB),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
    }
    // Bob's own user token does not act for team B.
    expect((await t.http().get(`/api/v1/models/${id}`).set('authorization', bob)).status).toBe(404);

    // Every member of team A sees it, a viewer too; only admins and owners change its sharing.
    expect((await t.http().get(`/api/v1/models/${id}`).set('authorization', viewerA)).status).toBe(200);
    const byMember = await put(teamA, id, { shared_with: [] });
    expect(byMember.status).toBe(403);
    expect(byMember.body.error.message).toMatch(/a team member cannot update or delete team models/);
    expect(await listedIds(teamB)).toContain(id);
    // Unshared by the team's owner: team B no longer sees it.
    expect((await put(ownerA, id, { shared_with: [] })).status).toBe(200);
    expect((await t.http().get(`/api/v1/models/${id}`).set('authorization', teamB)).status).toBe(404);
    expect(await listedIds(teamB)).not.toContain(id);
  });

  it('refuses ids that are not teams, writing nothing', async () => {
    const before = await listedIds(alice);
    const missing = '00000000-0000-4000-8000-000000000000';
    const res = await t
      .http()
      .post('/api/v1/models')
      .set('authorization', alice)
      .send({ ...program, visibility: 'private', shared_with: [missing] });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { sharedWith: `${missing} is not a team` },
    });
    expect(await listedIds(alice)).toEqual(before);
    const id = await createModel(alice, { visibility: 'private' });
    expect((await put(alice, id, { shared_with: ['not-a-team'] })).status).toBe(400);
    expect((await gqlModel(alice, id)).body.data.model.sharedWith).toEqual([]);
  });
});

interface RestVersion {
  id: string;
  model_id: string;
  sequence: number;
  command: string;
  machine_count: number;
  args: Record<string, unknown>;
  created_at: string;
}

async function versions(auth: string, id: string, query = ''): Promise<RestVersion[]> {
  const res = await t.http().get(`/api/v1/models/${id}/versions${query}`).set('authorization', auth);
  expect(res.status).toBe(200);
  return res.body;
}

describe('versions', () => {
  it('makes one on create and on each change to what runs, never for a descriptive change', async () => {
    const id = await createModel(alice);
    const [v1] = await versions(alice, id);
    expect(v1).toMatchObject({
      model_id: id,
      sequence: 1,
      container: 'local',
      command: program.command,
      machine_type: 'cpu',
      machine_count: 1,
      timeout_seconds: 3600,
      secrets: [],
      args: { word: { type: 'string', format: '--word=:value', optional: true } },
    });
    expect(new Date(v1.created_at).toISOString()).toBe(v1.created_at);

    // Descriptive fields, visibility, and a "change" to the same command: no new version.
    for (const body of [
      { name: 'Echo 2', description: 'says it again', tags: ['x'], version: '2.0' },
      { black_icon: 'https://cdn.example.test/b.png', example_outputs: ['https://cdn.example.test/o.png'] },
      { visibility: 'private' },
      { visibility: 'public' },
      { command: program.command },
    ]) {
      expect((await put(alice, id, body)).status).toBe(200);
      expect((await versions(alice, id)).map((v) => v.sequence)).toEqual([1]);
    }

    // Each field that decides what runs makes one.
    const changes: Record<string, unknown>[] = [
      { command: `node "${PROGRAM}" argv --again {args}` },
      { args: { word: { type: 'string', format: '-w :value' } } },
      { machine_count: 2 },
      { machine_type: 'gpu' },
      { timeout_seconds: 60 },
      { container: 'local2' },
      { secrets: ['HF_TOKEN'] },
    ];
    for (const body of changes) expect((await put(alice, id, body)).status).toBe(200);
    const all = await versions(alice, id);
    expect(all.map((v) => v.sequence)).toEqual([8, 7, 6, 5, 4, 3, 2, 1]);
    expect(new Set(all.map((v) => v.id)).size).toBe(8);
    // Immutable: version 1 still shows what ran first; each later one its own change.
    expect(all[7]).toEqual(v1);
    expect(all[6].command).toBe(changes[0].command);
    expect(all[5].args).toEqual({
      word: { type: 'string', format: '-w :value', example: '', optional: false, tags: null },
    });
    expect(all[4].machine_count).toBe(2);
    expect(all[0]).toMatchObject({
      container: 'local2',
      timeout_seconds: 60,
      machine_type: 'gpu',
      secrets: ['HF_TOKEN'],
    });

    const one = await t.http().get(`/api/v1/models/${id}/versions/${all[6].id}`).set('authorization', alice);
    expect(one.status).toBe(200);
    expect(one.body).toEqual(all[6]);

    const gql = await t.gql(
      `query ($id: ID!) { model(id: $id) { latestVersion { id sequence container secrets }
        versions(first: 3) { nodes { sequence } pageInfo { hasNextPage endCursor } } } }`,
      { id },
      alice,
    );
    expect(gql.body.data.model.latestVersion).toEqual({
      id: all[0].id,
      sequence: 8,
      container: 'local2',
      secrets: ['HF_TOKEN'],
    });
    expect(gql.body.data.model.versions.nodes.map((v: { sequence: number }) => v.sequence)).toEqual([
      8, 7, 6,
    ]);
    expect(gql.body.data.model.versions.pageInfo.hasNextPage).toBe(true);
  });

  it('pages newest first over REST with a Link to the next page', async () => {
    const id = await createModel(alice);
    for (const n of [1, 2, 3]) await put(alice, id, { machine_count: n + 1 });
    const first = await t.http().get(`/api/v1/models/${id}/versions?limit=3`).set('authorization', alice);
    expect(first.body.map((v: RestVersion) => v.sequence)).toEqual([4, 3, 2]);
    const next = /<([^>]+)>; rel="next"/.exec(first.headers.link)![1];
    const second = await t.http().get(next).set('authorization', alice);
    expect(second.body.map((v: RestVersion) => v.sequence)).toEqual([1]);
    expect(second.headers.link).toBeUndefined();
    const bad = await t.http().get(`/api/v1/models/${id}/versions?cursor=nope`).set('authorization', alice);
    expect(bad.status).toBe(400);
  });

  it("answers 404 for another model's version and for ids that are not versions", async () => {
    const a = await createModel(alice);
    const b = await createModel(alice);
    const [vb] = await versions(alice, b);
    for (const path of [`/api/v1/models/${a}/versions/${vb.id}`, `/api/v1/models/${a}/versions/not-a-uuid`]) {
      const res = await t.http().get(path).set('authorization', alice);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
  });

  it('numbers the versions of concurrent updates one after another', async () => {
    const id = await createModel(alice);
    const results = await Promise.all([2, 3, 4, 5, 6].map((n) => put(alice, id, { machine_count: n })));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const all = await versions(alice, id);
    expect(all.map((v) => v.sequence)).toEqual([6, 5, 4, 3, 2, 1]);
    expect(new Set(all.slice(0, 5).map((v) => v.machine_count))).toEqual(new Set([2, 3, 4, 5, 6]));
  });

  it('keeps the versions of a deleted model for the jobs that ran them', async () => {
    const id = await createModel(alice);
    await put(alice, id, { machine_count: 3 });
    expect((await t.http().delete(`/api/v1/models/${id}`).set('authorization', alice)).status).toBe(204);
    expect((await t.http().get(`/api/v1/models/${id}/versions`).set('authorization', alice)).status).toBe(
      404,
    );
    const pg = new Client({ connectionString: t.databaseUrl });
    await pg.connect();
    try {
      const rows = await pg.query(
        'select sequence from model_versions where model_id = $1 order by sequence',
        [id],
      );
      expect(rows.rows).toEqual([{ sequence: 1 }, { sequence: 2 }]);
    } finally {
      await pg.end();
    }
  });

  it('gives the built-in models a first version', async () => {
    const res = await t.gql(
      'query ($id: ID!) { model(id: $id) { latestVersion { sequence command } } }',
      {
        id: BUILTIN.wordcount,
      },
      alice,
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.model.latestVersion).toEqual({
      sequence: 1,
      command: 'media-demo wordcount {args}',
    });
  });

  it('are made by the migration for the models that existed before it, as version 1', async () => {
    const url = await createTestDatabase();
    const orm = await openOrm({ clientUrl: url, entities, migrations: true, migrate: false });
    try {
      await orm.migrator.up({ to: 'Migration20261126143000_queue_workers' });
      await orm.em.getConnection().execute(
        `insert into models (id, name, version, container, command, machine_type, machine_count, args, tags,
           example_outputs, timeout_seconds, max_retries, run_count, builtin, created_at, updated_at)
         values ('5b0b7e3a-1111-4c1d-9e2f-000000000001', 'Old', '', 'old:1', 'run {args}', 'cpu', 1, '[]', '{}',
           '{}', 60, 0, 0, false, now(), '2026-01-02T03:04:05Z')`,
      );
      await orm.migrator.up();
      const rows = await orm.em
        .getConnection()
        .execute(
          `select sequence, container, command, timeout_seconds, secrets, created_at from model_versions`,
        );
      expect(rows).toEqual([
        {
          sequence: 1,
          container: 'old:1',
          command: 'run {args}',
          timeout_seconds: 60,
          secrets: [],
          created_at: '2026-01-02 03:04:05+00',
        },
      ]);
      const [model] = await orm.em
        .getConnection()
        .execute(`select visibility, shared_with, secrets from models`);
      expect(model).toEqual({ visibility: 'public', shared_with: [], secrets: [] });
    } finally {
      await orm.close(true);
    }
  });
});
