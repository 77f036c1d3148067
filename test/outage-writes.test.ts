import request from 'supertest';
import { isDatabaseUnavailable } from '../src/common/errors';
import { startTestApp, type TestApp } from './helpers/app';
import { pngBytes, storedMedia, uploadFile } from './helpers/media';
import { TestHomeserver } from './helpers/matrix-homeserver';
import { startOwnPostgres, type OwnPostgres } from './helpers/pg-server';

/**
 * Every write path while the database is frozen (docs/faults.md, "Writes while the database is
 * frozen"): 503 UNAVAILABLE with Retry-After, nothing written, and the same write works after the
 * thaw. Each write meets the freeze on a warm pool (a live idle connection, whose transaction's
 * BEGIN then gets no answer), the case that answered 500.
 */

jest.setTimeout(240_000);

const QUERY_TIMEOUT_MS = 1500;
const SECRET = 'registration-shared-secret';
const PASSWORD = 'Correct-horse-9';

let pg: OwnPostgres;
let hs: TestHomeserver;
let t: TestApp;
let auth: string;
let modelId: string;
let mediaId: string;

const bridge = () => request(t.bridgeUrl!);

beforeAll(async () => {
  pg = await startOwnPostgres();
  hs = await TestHomeserver.start(SECRET, 'chat.test');
  t = await startTestApp(
    {
      DATABASE_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
      LOCAL_EXECUTOR_TRUST: 'any',
      // Off, so that each request reaches its own statements (with the limits on, a request its
      // process holds no leased point for is refused by the limiter first: test/outage.test.ts).
      RATE_LIMIT_PER_MINUTE: '0',
      RATE_LIMIT_UPLOADS_PER_MINUTE: '0',
      RATE_LIMIT_DEPLOYMENTS_PER_MINUTE: '0',
      MATRIX_HOMESERVER_URL: hs.url,
      MATRIX_REGISTRATION_SHARED_SECRET: SECRET,
      MATRIX_SERVER_NAME: 'chat.test',
    },
    { databaseUrl: pg.url },
  );
  auth = `Bearer ${await t.tokenFor('writer')}`;
  const model = await t
    .http()
    .post('/api/v1/models')
    .set('authorization', auth)
    .send({ name: 'before', container: 'local', command: 'node -e 1 {args}', args: {} });
  expect(model.status).toBe(201);
  modelId = model.body.id;
  const upload = await uploadFile(t, auth, pngBytes(), 'image.png', 'before');
  expect(upload.status).toBe(200);
  mediaId = upload.body.media.id;
  expect(
    (await bridge().post('/api/v1/matrix/user').send({ username: 'bob', password: PASSWORD })).status,
  ).toBe(201);
});

afterAll(async () => {
  await t?.close();
  await hs?.stop();
  await pg?.remove();
});

/** What the writes below could change, read in one statement. */
async function state(): Promise<Record<string, unknown>> {
  const [row] = await t.runtime.orm.em.fork().execute(`select
      (select count(*)::int from teams) as teams,
      (select count(*)::int from teams t where not exists
        (select 1 from team_members m where m.team_id = t.id and m.role = 'owner')) as teams_without_owner,
      (select count(*)::int from api_keys) as api_keys,
      (select count(*)::int from models) as models,
      (select count(*)::int from deployments) as deployments,
      (select count(*)::int from deployments d where not exists
        (select 1 from jobs j where j.deployment_id = d.id)) as deployments_without_job,
      (select count(*)::int from jobs) as jobs,
      (select json_build_object('status', status, 'tags', tags) from media_assets where id = '${mediaId}') as media,
      (select count(*)::int from media_assets) as media_assets,
      (select json_agg(key order by key) from webhook_secrets) as webhook_secrets,
      (select json_agg(username order by username) from chat_bridge_users) as bridge_users,
      (select count(*)::int from chat_bridge_api_keys) as bridge_api_keys`);
  return row;
}

interface WritePath {
  name: string;
  send: () => request.Test;
  /** The status it answers when the database answers. */
  ok: number;
  graphql?: boolean;
}

const writes: WritePath[] = [
  {
    name: 'POST /api/v1/teams',
    ok: 201,
    send: () => t.http().post('/api/v1/teams').set('authorization', auth).send({ name: 'during' }),
  },
  {
    name: 'POST /api/v1/tokens',
    ok: 201,
    send: () => t.http().post('/api/v1/tokens').set('authorization', auth).send({ name: 'during' }),
  },
  {
    name: 'POST /api/v1/models',
    ok: 201,
    send: () =>
      t
        .http()
        .post('/api/v1/models')
        .set('authorization', auth)
        .send({ name: 'during', container: 'local', command: 'node -e 1 {args}', args: {} }),
  },
  {
    name: 'POST /api/v1/deployments',
    ok: 201,
    send: () =>
      t
        .http()
        .post('/api/v1/deployments')
        .set('authorization', auth)
        .send({ name: 'during', model_id: modelId, args: {} }),
  },
  {
    name: 'POST /uploads/upload',
    ok: 200,
    send: () =>
      t.http().post('/uploads/upload').set('authorization', auth).attach('file', pngBytes(), 'during.png'),
  },
  {
    name: 'PUT /api/v1/media/:id',
    ok: 200,
    send: () =>
      t
        .http()
        .put(`/api/v1/media/${mediaId}`)
        .set('authorization', auth)
        .send({ tags: ['during'] }),
  },
  {
    name: 'POST /api/v1/webhooks/default/secret/rotate',
    ok: 200,
    send: () => t.http().post('/api/v1/webhooks/default/secret/rotate').set('authorization', auth),
  },
  {
    name: 'POST /api/v1/matrix/user',
    ok: 201,
    send: () => bridge().post('/api/v1/matrix/user').send({ username: 'alice', password: PASSWORD }),
  },
  {
    name: 'POST /api/v1/matrix/user/login',
    ok: 200,
    send: () => bridge().post('/api/v1/matrix/user/login').send({ username: 'bob', password: PASSWORD }),
  },
  ...(
    [
      ['createTeam', 'mutation { createTeam(input: { name: "during" }) { id } }'],
      ['createApiKey', 'mutation { createApiKey(input: { name: "during" }) { value } }'],
      [
        'createDeployment',
        `mutation { createDeployment(input: { name: "during", modelId: "MODEL", args: {} }) { id job { id } } }`,
      ],
    ] as const
  ).map(([name, query]) => ({
    name: `GraphQL ${name}`,
    ok: 200,
    graphql: true,
    send: () =>
      t
        .http()
        .post('/graphql')
        .set('authorization', auth)
        .send({ query: query.replace('MODEL', modelId) }),
  })),
  // Last: it removes the asset the update above needs.
  {
    name: 'DELETE /api/v1/media/:id',
    ok: 204,
    send: () => t.http().delete(`/api/v1/media/${mediaId}`).set('authorization', auth),
  },
];

/** Until the database answers again through the service. */
async function waitUntilReady(): Promise<void> {
  while ((await t.http().get('/readyz')).status !== 200) await new Promise((r) => setTimeout(r, 100));
}

it('a transaction whose BEGIN gets no answer fails with the error that says so', async () => {
  await waitUntilReady();
  const em = t.runtime.orm.em.fork();
  await em.execute('select 1'); // a live connection in the pool
  await pg.freeze();
  let err: unknown;
  try {
    await em.transactional((tx) => tx.execute(`insert into teams (id) values (gen_random_uuid())`));
  } catch (e) {
    err = e;
  } finally {
    await pg.thaw();
  }
  // Not knex's "Transaction query already complete", which no longer says why (500 INTERNAL).
  expect(err).toMatchObject({ name: 'QueryTimeoutError', code: 'ETIMEDOUT' });
  expect(isDatabaseUnavailable(err)).toBe(true);
});

it('every write answers 503 UNAVAILABLE with Retry-After while the database is frozen, and writes nothing', async () => {
  const before = await state();
  const answers: Record<string, unknown> = {};
  for (const write of writes) {
    await waitUntilReady();
    // Warm: the pool holds live connections when the freeze comes.
    await Promise.all(Array.from({ length: 3 }, () => state()));
    await pg.freeze();
    let res: request.Response;
    try {
      res = await write.send();
    } finally {
      await pg.thaw();
    }
    const error = write.graphql ? res.body.errors?.[0] : res.body.error;
    answers[write.name] = {
      status: res.status,
      retryAfter: res.headers['retry-after'],
      code: write.graphql ? error?.extensions?.code : error?.code,
      message: error?.message,
      ...(write.graphql
        ? { retryAfterSeconds: error?.extensions?.retryAfterSeconds, data: res.body.data }
        : {}),
    };
  }
  const unavailable = {
    status: 503,
    retryAfter: expect.stringMatching(/^\d+$/),
    code: 'UNAVAILABLE',
    message: 'the database is unavailable, try again shortly',
  };
  expect(answers).toEqual(
    Object.fromEntries(
      writes.map((w) => [
        w.name,
        w.graphql ? { ...unavailable, retryAfterSeconds: expect.any(Number), data: null } : unavailable,
      ]),
    ),
  );

  // After the thaw: nothing of the refused writes was stored, and each write works.
  await waitUntilReady();
  expect(await state()).toEqual(before);
  expect(hs.accounts.has('alice')).toBe(false);
  const stored = await storedMedia(t);
  expect(stored.files).toHaveLength(stored.rows.length); // no file without its row
  for (const write of writes) {
    const res = await write.send();
    expect({ name: write.name, status: res.status, errors: res.body.errors }).toEqual({
      name: write.name,
      status: write.ok,
      errors: undefined,
    });
  }
  expect(await state()).toMatchObject({
    teams: (before.teams as number) + 2,
    teams_without_owner: 0,
    api_keys: (before.api_keys as number) + 2,
    models: (before.models as number) + 1,
    deployments: (before.deployments as number) + 2,
    deployments_without_job: 0,
    jobs: (before.jobs as number) + 2,
    media: null, // deleted, file and row
    media_assets: before.media_assets, // one uploaded, one deleted
    bridge_users: ['alice', 'bob'],
    bridge_api_keys: (before.bridge_api_keys as number) + 2,
  });
});
