import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import type { RestModelFragment } from '../rest-compat/generated/graphql';
import { Model } from '../src/models/model.entity';
import { BUILTIN_MODELS, seedBuiltinModels } from '../src/models/model.seed';
import { incrementRunCount } from '../src/models/model.service';
import { User } from '../src/users/user.entity';
import { planOf } from './helpers/sql';
import { startTestApp, type TestApp } from './helpers/app';

let t: TestApp;
/** SQL statements of the running app, while a test records them. */
let recording: string[] | null = null;
let owner: string;
let other: string;
let teamKey: string;
/** The team's owner acting for it through the web app's session token (keys are never admins). */
let teamOwner: string;

beforeAll(async () => {
  t = await startTestApp({}, { onQuery: (sql) => recording?.push(sql) });
  owner = `Bearer ${await t.tokenFor('model-owner')}`;
  other = `Bearer ${await t.tokenFor('model-other')}`;
  const team = await t.http().post('/api/v1/teams').set('authorization', owner).send({ name: 'Models Inc' });
  const key = await t
    .http()
    .post('/api/v1/tokens')
    .set('authorization', owner)
    .send({ name: 'team', team_id: team.body.id });
  teamKey = key.body.token;
  const user = await t.runtime.orm.em.fork().findOneOrFail(User, { subject: 'model-owner' });
  const cookie = await t.runtime.services.sessions.open(user, null);
  teamOwner = `Bearer ${(await t.runtime.services.login.sessionToken({ cookie, teamId: team.body.id })).accessToken}`;
});
afterAll(() => t.close());

type Auth = string | { key: string };
function call(method: 'get' | 'post' | 'put' | 'patch' | 'delete', path: string, auth: Auth, body?: unknown) {
  const req = t.http()[method](path);
  if (typeof auth === 'string') req.set('authorization', auth);
  else req.set('x-service-key', auth.key);
  return body === undefined ? req : req.send(body as object);
}
const asTeam = () => ({ key: teamKey });

const GO_TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d*[1-9])? \+0000 UTC$/;
const MODEL_FIELDS = `id name version description container command machineType machineCount timeoutSeconds
  tags blackIcon whiteIcon colorIcon exampleOutputs classification runCount builtin createdAt updatedAt
  likeCount followCount viewerLikes viewerFollows viewerCanEdit
  args { name type format description example optional tags min max }`;

async function gqlModel(id: string, auth: Auth = owner) {
  const res = await t.gql(`query($id: ID!) { model(id: $id) { ${MODEL_FIELDS} } }`, { id }, asHeader(auth));
  return res.body;
}
const asHeader = (auth: Auth) => (typeof auth === 'string' ? auth : `Bearer ${auth.key}`);

const upscaler = {
  name: 'Upscaler',
  version: '2.1',
  description: 'Makes pictures bigger.',
  container: 'registry.example.test/upscaler:2.1',
  command: 'python upscale.py {args}',
  machine_type: 'gpu',
  machine_count: 2,
  tags: ['image', 'upscale'],
  black_icon: 'https://cdn.example.test/black.png',
  white_icon: 'https://cdn.example.test/white.png',
  color_icon: 'https://cdn.example.test/color.png',
  example_outputs: ['https://cdn.example.test/out1.png'],
  args: {
    input: {
      type: 'file',
      format: '@:value',
      description: 'The picture',
      example: 'a media id',
      tags: ['in'],
    },
    scale: { type: 'float', format: '--scale=:value', optional: true, min: 0, max: 1, example: '0.5' },
    mode: { type: 'string', format: '--mode=:value', optional: true },
  },
};

async function createModel(auth: Auth = owner, overrides: Record<string, unknown> = {}) {
  const res = await call('post', '/api/v1/models', auth, { ...upscaler, ...overrides });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

describe('built-in models', () => {
  const thumbnail = BUILTIN_MODELS[0].id;

  it('are installed at the first start and shown to everybody in the legacy shape', async () => {
    const list = await call('get', '/api/v1/models?tags=demo', other);
    expect(list.status).toBe(200);
    expect(list.body.map((m: { name: string }) => m.name).sort()).toEqual([
      'Image thumbnail',
      'Text recognition (OCR)',
      'Word count',
    ]);
    const res = await call('get', `/api/v1/models/${thumbnail}`, asTeam());
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      args: {
        image: {
          type: 'file',
          format: ':value',
          description: 'The image to scale down.',
          example: '',
          optional: false,
          tags: null,
        },
        width: {
          type: 'int',
          format: '--width=:value',
          description: 'Width of the thumbnail in pixels.',
          example: '256',
          optional: true,
          tags: null,
          min: 16,
          max: 4096,
        },
        format: {
          type: 'string',
          format: '--format=:value',
          description: 'Image format of the thumbnail.',
          example: 'png',
          optional: true,
          tags: null,
        },
      },
      black_icon: '',
      white_icon: '',
      color_icon: '',
      classification: 'fast',
      description: expect.stringContaining('thumbnail'),
      example_outputs: [],
      id: thumbnail,
      name: 'Image thumbnail',
      version: '1.0',
      run_count: 0,
      tags: ['demo', 'image', 'thumbnail'],
      updated_at: expect.stringMatching(GO_TIME),
    });
    const gql = await gqlModel(thumbnail);
    expect(gql.data.model).toMatchObject({
      builtin: true,
      viewerCanEdit: false,
      container: 'builtin/media-demo',
      command: 'media-demo thumbnail {args}',
      machineType: 'cpu',
      machineCount: 1,
    });
  });

  it('cannot be changed or deleted by anybody (403)', async () => {
    for (const auth of [owner, other, asTeam()]) {
      const put = await call('put', `/api/v1/models/${thumbnail}`, auth, { name: 'Mine now' });
      expect(put.status).toBe(403);
      expect(put.body.error.code).toBe('FORBIDDEN');
      expect((await call('delete', `/api/v1/models/${thumbnail}`, auth)).status).toBe(403);
    }
    expect((await gqlModel(thumbnail)).data.model.name).toBe('Image thumbnail');
  });

  it('are seeded idempotently: definitions restored, run counts kept, nothing touched when unchanged', async () => {
    const ocr = BUILTIN_MODELS[1].id;
    await incrementRunCount(t.runtime.orm.em.fork(), ocr);
    const before = (await gqlModel(ocr)).data.model;
    expect(before.runCount).toBe(1);

    await seedBuiltinModels(t.runtime.orm);
    const unchanged = (await gqlModel(ocr)).data.model;
    expect(unchanged.updatedAt).toBe(before.updatedAt);

    // A definition that differs from the code (an older release) is brought up to date.
    const pg = new Client({ connectionString: t.databaseUrl });
    await pg.connect();
    try {
      await pg.query(`update models set name = 'Old OCR', args = '[]' where id = $1`, [ocr]);
      await pg.query(`delete from models where id = $1`, [BUILTIN_MODELS[2].id]);
    } finally {
      await pg.end();
    }
    await seedBuiltinModels(t.runtime.orm);
    const restored = (await gqlModel(ocr)).data.model;
    expect(restored.name).toBe('Text recognition (OCR)');
    expect(restored.args.map((a: { name: string }) => a.name)).toEqual(['image', 'lang']);
    expect(restored.runCount).toBe(1);
    expect((await gqlModel(BUILTIN_MODELS[2].id)).data.model.name).toBe('Word count');
    const count = await t.runtime.orm.em.fork().count(Model, { builtin: true });
    expect(count).toBe(3);
  });
});

describe('creating models', () => {
  it('answers only the create fields', async () => {
    const res = await call('post', '/api/v1/models', owner, upscaler);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      classification: 'fast',
      example_outputs: ['https://cdn.example.test/out1.png'],
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'Upscaler',
      version: '2.1',
      tags: ['image', 'upscale'],
    });
  });

  it('takes a client-supplied id, and answers 409 when it is taken', async () => {
    const id = randomUUID();
    const res = await call('post', '/api/v1/models', owner, { ...upscaler, id });
    expect(res.status).toBe(201);
    expect(res.body.id).toBe(id);
    const again = await call('post', '/api/v1/models', other, { ...upscaler, id });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('CONFLICT');
    const builtin = await call('post', '/api/v1/models', other, { ...upscaler, id: BUILTIN_MODELS[0].id });
    expect(builtin.status).toBe(409);
    const bad = await call('post', '/api/v1/models', other, { ...upscaler, id: 'not-a-uuid' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'VALIDATION_FAILED', details: { id: 'must be a UUID' } });
  });

  it('requires name, container and args; defaults the rest', async () => {
    for (const missing of ['name', 'container', 'args']) {
      const b: Record<string, unknown> = { ...upscaler };
      delete b[missing];
      const res = await call('post', '/api/v1/models', owner, b);
      expect(res.status).toBe(400);
    }
    const id = await createModel(owner, {
      version: undefined,
      description: undefined,
      command: undefined,
      machine_type: undefined,
      machine_count: undefined,
      tags: undefined,
      black_icon: undefined,
      white_icon: undefined,
      color_icon: undefined,
      example_outputs: undefined,
      args: {},
    });
    const rest = await call('get', `/api/v1/models/${id}`, owner);
    expect(rest.body).toEqual({
      args: {},
      black_icon: '',
      white_icon: '',
      color_icon: '',
      classification: 'fast',
      example_outputs: [],
      id,
      name: 'Upscaler',
      version: '',
      run_count: 0,
      tags: [],
      updated_at: expect.stringMatching(GO_TIME),
    });
    const gql = (await gqlModel(id)).data.model;
    expect(gql).toMatchObject({
      command: '{args}',
      machineType: 'cpu',
      machineCount: 1,
      timeoutSeconds: 3600,
    });
  });

  it('belongs to the team when a team token creates it', async () => {
    const id = await createModel(asTeam());
    // A team key is a `member`: it creates team models, its admins and owners change them.
    expect((await gqlModel(id, asTeam())).data.model.viewerCanEdit).toBe(false);
    expect((await gqlModel(id, teamOwner)).data.model.viewerCanEdit).toBe(true);
    expect((await gqlModel(id, owner)).data.model.viewerCanEdit).toBe(false);
  });
});

describe('argument and field validation', () => {
  const cases: [string, Record<string, unknown>, Record<string, string>][] = [
    [
      'an unknown type',
      { args: { x: { type: 'blob', format: ':value' } } },
      { 'args.x.type': expect.any(String) },
    ],
    ['a missing type', { args: { x: { format: ':value' } } }, { 'args.x.type': expect.any(String) }],
    [
      'a format without :value',
      { args: { x: { type: 'int', format: '--x' } } },
      { 'args.x.format': 'must contain :value' },
    ],
    ['a missing format', { args: { x: { type: 'int' } } }, { 'args.x.format': 'is required' }],
    [
      'min above max',
      { args: { x: { type: 'int', format: ':value', min: 5, max: 1 } } },
      { 'args.x.min': 'must not exceed max' },
    ],
    [
      'a fractional int bound',
      { args: { x: { type: 'int', format: ':value', max: 1.5 } } },
      { 'args.x.max': 'must be an integer' },
    ],
    [
      'bounds on a file',
      { args: { x: { type: 'file', format: ':value', min: 0 } } },
      { 'args.x.min': expect.any(String) },
    ],
    [
      'a bad argument name',
      { args: { 'bad name': { type: 'int', format: ':value' } } },
      { 'args[0].name': expect.any(String) },
    ],
    ['a non-object argument', { args: { x: 'int' } }, { 'args.x': 'must be an object' }],
    [
      'a string bound',
      { args: { x: { type: 'int', format: ':value', min: 'low' } } },
      { 'args.x.min': 'must be a number' },
    ],
    [
      'a non-boolean optional',
      { args: { x: { type: 'int', format: ':value', optional: 'yes' } } },
      { 'args.x.optional': 'must be a boolean' },
    ],
    ['args as a list', { args: [{ type: 'int' }] }, { args: expect.any(String) }],
    [
      'a command without {args}',
      { command: 'run' },
      { command: 'must contain {args} exactly once, as a word of its own' },
    ],
    [
      'a command with {args} twice',
      { command: 'run {args} {args}' },
      { command: 'must contain {args} exactly once, as a word of its own' },
    ],
    [
      'a command with {args} inside a word',
      { command: 'run --all={args}' },
      { command: 'must contain {args} exactly once, as a word of its own' },
    ],
    ['a command with an unclosed quote', { command: "run 'x {args}" }, { command: 'has an unclosed quote' }],
    [
      'an icon that is not a URL',
      { black_icon: 'javascript:alert(1)' },
      { blackIcon: 'must be an http(s) URL' },
    ],
    [
      'an example output that is not a URL',
      { example_outputs: ['nope'] },
      { 'exampleOutputs[0]': 'must be an http(s) URL' },
    ],
    ['machine_count 0', { machine_count: 0 }, { machineCount: expect.any(String) }],
    ['a machine type with spaces', { machine_type: 'big gpu' }, { machineType: expect.any(String) }],
    ['timeout_seconds above a day', { timeout_seconds: 86401 }, { timeoutSeconds: expect.any(String) }],
    ['an empty name', { name: '  ' }, { name: 'is required' }],
    ['a container with spaces', { container: 'a b' }, { container: 'must not contain whitespace' }],
    [
      "a container of the service's own",
      { container: 'builtin/media-demo' },
      { container: "builtin/... names the service's own containers" },
    ],
    ['a too long description', { description: 'x'.repeat(10_001) }, { description: expect.any(String) }],
  ];

  it.each(cases)(
    'refuses %s with VALIDATION_FAILED naming it, on create and update',
    async (_what, change, details) => {
      const created = await call('post', '/api/v1/models', owner, { ...upscaler, ...change });
      expect(created.status).toBe(400);
      expect(created.body.error.code).toBe('VALIDATION_FAILED');
      expect(created.body.error.details).toEqual(details);
      const id = await createModel();
      const updated = await call('put', `/api/v1/models/${id}`, owner, change);
      expect(updated.status).toBe(400);
      expect(updated.body.error.details).toEqual(details);
      // Nothing was written.
      expect((await gqlModel(id)).data.model.name).toBe('Upscaler');
    },
  );

  it('names every problem at once, and refuses duplicate argument names (GraphQL)', async () => {
    const res = await t.gql(
      `mutation($input: CreateModelInput!) { createModel(input: $input) { id } }`,
      {
        input: {
          name: 'Dup',
          container: 'c',
          args: [
            { name: 'a', type: 'int', format: ':value' },
            { name: 'a', type: 'nope', format: 'x' },
          ],
        },
      },
      owner,
    );
    expect(res.body.errors[0].extensions).toEqual({
      code: 'VALIDATION_FAILED',
      details: {
        'args.a': 'is defined twice',
        'args.a.type': expect.any(String),
        'args.a.format': 'must contain :value',
      },
    });
  });
});

describe('reading models', () => {
  it('lists full records, filters by any of the tags and pages with a Link', async () => {
    const tag = `t-${randomUUID().slice(0, 8)}`;
    const a = await createModel(owner, { tags: [tag, 'a'] });
    const b = await createModel(other, { tags: ['b', tag] });
    const c = await createModel(other, { tags: [`${tag}-c`] });
    const res = await call('get', `/api/v1/models?tags=${tag},${tag}-c`, owner);
    expect(res.status).toBe(200);
    expect(res.body.map((m: { id: string }) => m.id)).toEqual([c, b, a]);
    expect(res.body[2]).toEqual({ ...(await call('get', `/api/v1/models/${a}`, owner)).body });
    const page = await call('get', `/api/v1/models?tags=${tag},${tag}-c&limit=2`, owner);
    expect(page.body.map((m: { id: string }) => m.id)).toEqual([c, b]);
    const next = /<([^>]+)>; rel="next"/.exec(page.headers.link)![1];
    expect(next).toContain(`tags=${tag}`);
    expect((await call('get', next, owner)).body.map((m: { id: string }) => m.id)).toEqual([a]);
    expect((await call('get', '/api/v1/models?tags=no-such-tag', owner)).body).toEqual([]);
  });

  it('answers 404 for an unknown or malformed id', async () => {
    for (const id of [randomUUID(), 'nope']) {
      const res = await call('get', `/api/v1/models/${id}`, owner);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: { code: 'NOT_FOUND', message: 'model not found' } });
    }
    const gql = await t.gql('{ model(id: "nope") { id } }', {}, owner);
    expect(gql.body.errors[0].extensions.code).toBe('NOT_FOUND');
  });

  it('needs a credential', async () => {
    expect((await t.http().get('/api/v1/models')).status).toBe(401);
  });

  it('offers a GraphQL connection with a filter, and the viewer’s own models', async () => {
    const tag = `g-${randomUUID().slice(0, 8)}`;
    const mine = await createModel(owner, { tags: [tag] });
    await createModel(other, { tags: [tag] });
    const res = await t.gql(
      `query($tags: [String!]) { all: models(filter: { tags: $tags }) { nodes { id } }
         mine: models(filter: { tags: $tags, mine: true }, first: 1) { nodes { id } pageInfo { hasNextPage } } }`,
      { tags: [tag] },
      owner,
    );
    expect(res.body.data.all.nodes).toHaveLength(2);
    expect(res.body.data.mine).toEqual({ nodes: [{ id: mine }], pageInfo: { hasNextPage: false } });
  });
});

describe('updating and deleting', () => {
  it('lets the owner change given fields, keeping the others, and answers the full record', async () => {
    const id = await createModel();
    const before = (await gqlModel(id)).data.model;
    const res = await call('put', `/api/v1/models/${id}`, owner, {
      name: 'Upscaler XL',
      description: null,
      args: { image: { type: 'file', format: ':value' } },
      tags: ['xl'],
      timeout_seconds: 60,
      // Read-only fields a client copies from a GET are ignored.
      id: randomUUID(),
      run_count: 99,
      classification: 'slow',
      updated_at: 'whenever',
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      args: { image: { type: 'file', format: ':value', example: '', optional: false, tags: null } },
      black_icon: upscaler.black_icon,
      white_icon: upscaler.white_icon,
      color_icon: upscaler.color_icon,
      classification: 'fast',
      example_outputs: upscaler.example_outputs,
      id,
      name: 'Upscaler XL',
      version: '2.1',
      run_count: 0,
      tags: ['xl'],
      updated_at: expect.stringMatching(GO_TIME),
    });
    const after = (await gqlModel(id)).data.model;
    expect(after).toMatchObject({
      container: upscaler.container,
      machineType: 'gpu',
      machineCount: 2,
      timeoutSeconds: 60,
    });
    expect(new Date(after.updatedAt).getTime()).toBeGreaterThanOrEqual(new Date(before.updatedAt).getTime());
  });

  it('refuses other principals: 403 for a model they see but do not own, 404 for an unknown one', async () => {
    const userModel = await createModel(owner);
    const teamModel = await createModel(asTeam());
    const attempts: [Auth, string][] = [
      [other, userModel],
      [asTeam(), userModel], // the team token is not the user
      [owner, teamModel], // nor the user token the team
      [other, teamModel],
    ];
    for (const [auth, id] of attempts) {
      const put = await call('put', `/api/v1/models/${id}`, auth, { name: 'Taken' });
      expect(put.status).toBe(403);
      expect(put.body.error.code).toBe('FORBIDDEN');
      expect((await call('delete', `/api/v1/models/${id}`, auth)).status).toBe(403);
    }
    expect((await gqlModel(userModel)).data.model.name).toBe('Upscaler');
    expect((await gqlModel(teamModel)).data.model.name).toBe('Upscaler');
    expect((await call('put', `/api/v1/models/${randomUUID()}`, owner, { name: 'x' })).status).toBe(404);
    expect((await call('delete', `/api/v1/models/${randomUUID()}`, owner)).status).toBe(404);
    expect((await call('put', `/api/v1/models/${teamModel}`, asTeam(), { name: 'Team XL' })).status).toBe(
      403,
    );
    expect((await call('put', `/api/v1/models/${teamModel}`, teamOwner, { name: 'Team XL' })).status).toBe(
      200,
    );
  });

  it('deletes with 204 and no body, together with likes and follows', async () => {
    const id = await createModel();
    await call('patch', `/api/v1/models/${id}/like`, other);
    await call('patch', `/api/v1/models/${id}/follow`, other);
    const res = await call('delete', `/api/v1/models/${id}`, owner);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect((await call('get', `/api/v1/models/${id}`, owner)).status).toBe(404);
    expect((await call('delete', `/api/v1/models/${id}`, owner)).status).toBe(404);
    const liked = await t.gql('{ likedModels { nodes { id } } followedModels { nodes { id } } }', {}, other);
    expect(liked.body.data.likedModels.nodes).not.toContainEqual({ id });
    expect(liked.body.data.followedModels.nodes).not.toContainEqual({ id });
  });
});

describe('likes and follows', () => {
  const REACTIONS = `likeCount followCount viewerLikes viewerFollows`;
  const reactions = async (id: string, auth: Auth) =>
    (await t.gql(`query($id: ID!) { model(id: $id) { ${REACTIONS} } }`, { id }, asHeader(auth))).body.data
      .model;

  /** Every reaction answers 200 with its legacy message, whatever the state was. */
  async function react(id: string, action: string, auth: Auth) {
    const res = await call('patch', `/api/v1/models/${id}/${action}`, auth);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: `model ${action} successfully` });
  }

  it('answers the legacy messages and is idempotent', async () => {
    const id = await createModel();
    for (const action of ['like', 'like', 'follow', 'follow']) await react(id, action, other);
    expect(await reactions(id, other)).toEqual({
      likeCount: 1,
      followCount: 1,
      viewerLikes: true,
      viewerFollows: true,
    });
    expect(await reactions(id, owner)).toEqual({
      likeCount: 1,
      followCount: 1,
      viewerLikes: false,
      viewerFollows: false,
    });
    await call('patch', `/api/v1/models/${id}/like`, owner);
    expect((await reactions(id, owner)).likeCount).toBe(2);

    for (const action of ['unlike', 'unlike', 'unfollow', 'unfollow']) await react(id, action, other);
    expect(await reactions(id, other)).toEqual({
      likeCount: 1,
      followCount: 0,
      viewerLikes: false,
      viewerFollows: false,
    });
  });

  it("belong to the user behind a team token, and list the viewer's liked and followed models", async () => {
    const liked = await createModel(other);
    const followed = await createModel(other);
    await call('patch', `/api/v1/models/${liked}/like`, asTeam());
    await call('patch', `/api/v1/models/${followed}/follow`, owner);
    expect((await reactions(liked, owner)).viewerLikes).toBe(true);
    const res = await t.gql(
      `{ likedModels { nodes { id viewerLikes } } followedModels(first: 1) { nodes { id } edges { cursor } pageInfo { hasNextPage } } }`,
      {},
      asHeader(asTeam()),
    );
    expect(res.body.data.likedModels.nodes[0]).toEqual({ id: liked, viewerLikes: true });
    expect(res.body.data.followedModels.nodes).toEqual([{ id: followed }]);
  });

  it('answers 404 for an unknown model', async () => {
    for (const action of ['like', 'unlike', 'follow', 'unfollow']) {
      const res = await call('patch', `/api/v1/models/${randomUUID()}/${action}`, owner);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
  });
});

describe('the REST answers carry the same data as GraphQL', () => {
  /** The legacy record built independently from a GraphQL answer. */
  const expectedRecord = (m: RestModelFragment) => ({
    args: Object.fromEntries(
      m.args.map((a) => [
        a.name,
        Object.fromEntries(
          Object.entries({ ...a, example: a.example ?? '' }).filter(
            ([k, v]) => k !== 'name' && (v !== null || k === 'tags'),
          ),
        ),
      ]),
    ),
    black_icon: m.blackIcon ?? '',
    white_icon: m.whiteIcon ?? '',
    color_icon: m.colorIcon ?? '',
    classification: m.classification,
    ...(m.description ? { description: m.description } : {}),
    example_outputs: m.exampleOutputs,
    id: m.id,
    name: m.name,
    version: m.version,
    run_count: m.runCount,
    tags: m.tags,
    updated_at: expect.stringMatching(GO_TIME),
  });

  it('POST /api/v1/models', async () => {
    const res = await call('post', '/api/v1/models', owner, upscaler);
    const m = (await gqlModel(res.body.id)).data.model;
    expect(res.body).toEqual({
      classification: m.classification,
      example_outputs: m.exampleOutputs,
      id: m.id,
      name: m.name,
      version: m.version,
      tags: m.tags,
    });
  });

  it('GET /api/v1/models/{id} and PUT /api/v1/models/{id}', async () => {
    const id = await createModel();
    const created = (await gqlModel(id)).data.model;
    await incrementRunCount(t.runtime.orm.em.fork(), id);
    const got = await call('get', `/api/v1/models/${id}`, owner);
    const m = (await gqlModel(id)).data.model;
    expect(got.body).toEqual(expectedRecord(m));
    expect(got.body.run_count).toBe(1);
    // A run is not a change of the definition.
    expect(m.updatedAt).toBe(created.updatedAt);
    expect(new Date(got.body.updated_at.replace(' +0000 UTC', 'Z')).getTime()).toBe(
      new Date(m.updatedAt).getTime(),
    );
    const put = await call('put', `/api/v1/models/${id}`, owner, { version: '3' });
    expect(put.body).toEqual(expectedRecord((await gqlModel(id)).data.model));
  });

  it('GET /api/v1/models', async () => {
    const res = await call('get', '/api/v1/models?limit=5', owner);
    const gql = await t.gql(`{ models(first: 5) { nodes { ${MODEL_FIELDS} } } }`, {}, owner);
    expect(res.body).toEqual(gql.body.data.models.nodes.map(expectedRecord));
  });

  it('DELETE /api/v1/models/{id} and the reactions', async () => {
    const id = await createModel();
    await call('patch', `/api/v1/models/${id}/like`, owner);
    await call('patch', `/api/v1/models/${id}/follow`, owner);
    expect((await gqlModel(id)).data.model).toMatchObject({
      likeCount: 1,
      viewerLikes: true,
      followCount: 1,
      viewerFollows: true,
    });
    await call('patch', `/api/v1/models/${id}/unlike`, owner);
    await call('patch', `/api/v1/models/${id}/unfollow`, owner);
    expect((await gqlModel(id)).data.model).toMatchObject({
      likeCount: 0,
      viewerLikes: false,
      followCount: 0,
      viewerFollows: false,
    });
    await call('delete', `/api/v1/models/${id}`, owner);
    expect((await gqlModel(id)).errors[0].extensions.code).toBe('NOT_FOUND');
  });
});

describe('lists stay free of N+1 queries', () => {
  const LIST = `query($n: Int!, $tag: String!) {
    models(first: $n, filter: { tags: [$tag] }) { nodes { id likeCount followCount viewerLikes viewerFollows } }
  }`;

  async function statementsFor(n: number, tag: string) {
    recording = [];
    try {
      const res = await t.gql(LIST, { n, tag }, owner);
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data.models.nodes).toHaveLength(n);
      // The worker's housekeeping (heartbeat every 5 s, reconciliation every 10 s) may fall in.
      const housekeeping = /worker_instances|from "jobs" as "j0" where "j0"."status" in/;
      return {
        statements: recording.filter((sql) => !housekeeping.test(sql)),
        nodes: res.body.data.models.nodes,
      };
    } finally {
      recording = null;
    }
  }

  it("costs the same constant number of statements for 10 and for 100 models, in its index's order", async () => {
    const tag = `bulk-${randomUUID().slice(0, 8)}`;
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) {
      const res = await t.gql(
        `mutation($input: CreateModelInput!) { createModel(input: $input) { id } }`,
        { input: { name: `Bulk ${i}`, container: 'c', tags: [tag], args: [] } },
        i % 2 ? owner : other,
      );
      ids.push(res.body.data.createModel.id);
    }
    for (const id of ids.slice(0, 30))
      await t.gql('mutation($id: ID!) { likeModel(id: $id) { id } }', { id }, owner);
    for (const id of ids.slice(20, 40))
      await t.gql('mutation($id: ID!) { followModel(id: $id) { id } }', { id }, other);

    const ten = await statementsFor(10, tag);
    const hundred = await statementsFor(100, tag);
    expect(hundred.statements.length).toBe(ten.statements.length);
    // Authentication, the page, one batch for likes and one for follows.
    expect(hundred.statements.filter((s) => /from "?models"? /.test(s))).toHaveLength(1);
    expect(hundred.statements.filter((s) => /model_likes|model_follows/.test(s))).toHaveLength(2);
    const byId = new Map(hundred.nodes.map((n: { id: string }) => [n.id, n]));
    expect(byId.get(ids[0])).toEqual({
      id: ids[0],
      likeCount: 1,
      followCount: 0,
      viewerLikes: true,
      viewerFollows: false,
    });
    expect(byId.get(ids[25])).toEqual({
      id: ids[25],
      likeCount: 1,
      followCount: 1,
      viewerLikes: true,
      viewerFollows: false,
    });
    expect(byId.get(ids[99])).toEqual({
      id: ids[99],
      likeCount: 0,
      followCount: 0,
      viewerLikes: false,
      viewerFollows: false,
    });

    // The tag filter is an array overlap checked on the rows the keyset index yields, in order
    // (within the scan budget: test/list-plans.test.ts).
    const page = hundred.statements.find((s) => /from "?models"? /.test(s) && /&&/.test(s));
    expect(page).toBeDefined();
    const plan = await planOf(t.databaseUrl, page!, ['set enable_seqscan = off']);
    expect(plan).toContain('models_created_at_id_index');
  });
});
