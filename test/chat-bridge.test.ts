import { createHash, createPrivateKey, createPublicKey } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import request from 'supertest';
import YAML from 'yaml';
import { MatrixHomeserver } from '../src/chat-bridge/matrix.homeserver';
import { startTestApp, type TestApp } from './helpers/app';
import { TestHomeserver } from './helpers/matrix-homeserver';
import { eventually, isAlive, writeStub } from './helpers/stub-process';

jest.setTimeout(60_000);

const SECRET = 'registration-shared-secret';
const SERVER = 'chat.test';
const PASSWORD = 'Correct-horse-9';

let hs: TestHomeserver;
let t: TestApp;
let stubs: {
  dendrite: Awaited<ReturnType<typeof writeStub>>;
  matterbridge: Awaited<ReturnType<typeof writeStub>>;
};

const bridge = () => request(t.bridgeUrl!);
/** Each caller gets its own client address (the bridge trusts X-Forwarded-For from loopback). */
let nextIp = 1;
const freshIp = () => `198.51.100.${nextIp++}`;

async function createUser(username: string, password = PASSWORD): Promise<string> {
  const res = await bridge().post('/api/v1/matrix/user').send({ username, password });
  expect(res.status).toBe(201);
  return res.body.api_key as string;
}

function login(username: string, password: string, ip = freshIp()) {
  return bridge().post('/api/v1/matrix/user/login').set('x-forwarded-for', ip).send({ username, password });
}

/** Create and list, as the user of `key`, at one of the bridge's collections. */
function endpoints<T>(path: string) {
  return {
    create: (key: string, body: object) => bridge().post(path).set('x-api-key', key).send(body),
    list: async (key: string): Promise<T[]> => {
      const res = await bridge().get(path).set('x-api-key', key);
      expect(res.status).toBe(200);
      return res.body as T[];
    },
  };
}

async function sql<T>(query: string, params: unknown[] = []): Promise<T[]> {
  return t.runtime.orm.em.fork().getConnection().execute<T[]>(query, params);
}

/** Secrets as a production service holds them, in its own environment: its children must not. */
const SERVICE_SECRETS = {
  MATRIX_REGISTRATION_SHARED_SECRET: SECRET,
  BRIDGE_SECRET_KEY: '1'.repeat(64),
  OIDC_CLIENT_SECRET: 'client-secret',
  DATABASE_URL: 'postgres://user:password@db.example/media',
};

beforeAll(async () => {
  Object.assign(process.env, SERVICE_SECRETS);
  hs = await TestHomeserver.start(SECRET, SERVER);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bridge-stubs-'));
  stubs = { dendrite: await writeStub(dir, 'dendrite'), matterbridge: await writeStub(dir, 'matterbridge') };
  t = await startTestApp({
    MATRIX_HOMESERVER_URL: hs.url,
    MATRIX_REGISTRATION_SHARED_SECRET: SECRET,
    MATRIX_SERVER_NAME: SERVER,
    DENDRITE_BIN: stubs.dendrite.path,
    MATTERBRIDGE_BIN: stubs.matterbridge.path,
    BRIDGE_LOGIN_MAX_FAILURES: '3',
    BRIDGE_LOGIN_MAX_FAILURES_PER_IP: '6',
  });
});
afterAll(async () => {
  await t?.close();
  await hs?.stop();
  for (const name of Object.keys(SERVICE_SECRETS)) delete process.env[name];
});

describe('POST /api/v1/matrix/user', () => {
  it('registers the account on the homeserver and answers a key shown once and the host name', async () => {
    const res = await bridge().post('/api/v1/matrix/user').send({ username: 'alice', password: PASSWORD });
    expect(res.status).toBe(201);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['x-request-id']).toBeDefined();
    expect(res.body).toEqual({ api_key: expect.stringMatching(/^[\w-]{43}$/), Hostname: SERVER });
    expect(hs.accounts.get('alice')?.password).toBe(PASSWORD);

    const key = res.body.api_key as string;
    expect((await bridge().get('/api/v1/matrix/dendrite').set('x-api-key', key)).status).toBe(200);
    const [row] = await sql<{ password_hash: string; matrix_user_id: string; access_token_sealed: string }>(
      `select * from chat_bridge_users where username = 'alice'`,
    );
    expect(row.password_hash).toMatch(/^scrypt\$/);
    expect(row.password_hash).not.toContain(PASSWORD);
    expect(row.matrix_user_id).toBe('@alice:chat.test');
    const [hsToken] = hs.accounts.get('alice')!.tokens;
    expect(row.access_token_sealed).not.toContain(hsToken);
    const keys = await sql<{ key_hash: string }>(`select key_hash from chat_bridge_api_keys`);
    expect(keys.map((k) => k.key_hash)).toContain(createHash('sha256').update(key).digest('hex'));
    expect(JSON.stringify(keys)).not.toContain(key);
  });

  it('answers the versioned JSON type when asked', async () => {
    const res = await bridge()
      .post('/api/v1/matrix/user')
      .set('content-type', 'application/service.rest.v1+json')
      .set('accept', 'application/service.rest.v1+json')
      .send(JSON.stringify({ username: 'versioned', password: PASSWORD }));
    expect(res.status).toBe(201);
    expect(res.headers['content-type']).toMatch(/^application\/service\.rest\.v1\+json/);
  });

  it('answers 409 for a taken username without asking the homeserver again', async () => {
    await createUser('dup');
    const before = hs.registrations.length;
    const res = await bridge()
      .post('/api/v1/matrix/user')
      .send({ username: 'dup', password: 'Another-pass-1' });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: { code: 'CONFLICT', message: 'this username is taken' } });
    expect(hs.registrations.length).toBe(before);
  });

  it('answers 409 when the homeserver has the name already, and stores nothing', async () => {
    hs.addAccount('taken', 'Whatever-pass-1');
    const res = await bridge().post('/api/v1/matrix/user').send({ username: 'taken', password: PASSWORD });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('CONFLICT');
    expect(await sql(`select 1 from chat_bridge_users where username = 'taken'`)).toEqual([]);
  });

  it.each([
    ['Alice', 'must be lowercase'],
    ['al ice', 'may contain only'],
    ['al@ice', 'may contain only'],
    ['_bot', 'must not start with _'],
    ['x'.repeat(250), 'must be at most 244 characters'],
  ])('refuses the username %j (Matrix localpart rules)', async (username, problem) => {
    const res = await bridge().post('/api/v1/matrix/user').send({ username, password: PASSWORD });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(res.body.error.details.username).toContain(problem);
  });

  it.each([
    ['Short-1', 'at least 10'],
    ['onlylowercaseletters', 'mix at least two'],
    ['xyz-Carol-123', 'must not contain the username'],
    [`Aa1-${'x'.repeat(509)}`, 'at most 512'],
  ])('refuses the weak password %j', async (password, problem) => {
    const res = await bridge().post('/api/v1/matrix/user').send({ username: 'carol', password });
    expect(res.status).toBe(400);
    expect(res.body.error.details.password).toContain(problem);
    expect(hs.accounts.has('carol')).toBe(false);
  });

  it('answers 400/415/413 with the error body for malformed requests', async () => {
    const post = () => bridge().post('/api/v1/matrix/user');
    const notJson = await post().set('content-type', 'application/json').send('{"username":');
    expect(notJson.status).toBe(400);
    expect(notJson.body).toEqual({ error: { code: 'BAD_REQUEST', message: 'the body is not valid JSON' } });
    const array = await post().send([1, 2]);
    expect(array.status).toBe(400);
    expect(array.body.error.code).toBe('BAD_REQUEST');
    const text = await post().set('content-type', 'text/plain').send('username=x');
    expect(text.status).toBe(415);
    expect(text.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    const none = await post();
    expect(none.status).toBe(400);
    const wrongType = await post().send({ username: 42, password: PASSWORD });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.error.details).toEqual({ username: 'must be a string' });
    const missing = await post().send({ username: 'dave' });
    expect(missing.body.error.details).toEqual({ password: 'is required' });
    const huge = await post().send({ username: 'dave', password: 'x'.repeat(2 * 1024 * 1024) });
    expect(huge.status).toBe(413);
    expect(huge.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('answers 404 with the error body for unknown paths', async () => {
    const res = await bridge().get('/api/v1/matrix/nothing');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      error: { code: 'NOT_FOUND', message: 'no route for GET /api/v1/matrix/nothing' },
    });
  });
});

describe('shared-secret registration (HMAC)', () => {
  async function nonce(): Promise<string> {
    return ((await (await fetch(`${hs.url}/_synapse/admin/v1/register`)).json()) as { nonce: string }).nonce;
  }
  const register = (body: unknown) =>
    fetch(`${hs.url}/_synapse/admin/v1/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('the homeserver peer refuses a wrong MAC and a reused nonce, as Synapse does', async () => {
    const n = await nonce();
    const wrong = await register({
      nonce: n,
      username: 'mallory',
      password: PASSWORD,
      admin: false,
      mac: '00',
    });
    expect(wrong.status).toBe(403);
    expect(await wrong.json()).toEqual({ errcode: 'M_UNKNOWN', error: 'HMAC incorrect' });
    const mac = hs.mac(n, 'mallory', PASSWORD);
    const reused = await register({ nonce: n, username: 'mallory', password: PASSWORD, admin: false, mac });
    expect(reused.status).toBe(400);
    expect(((await reused.json()) as { error: string }).error).toBe('unrecognised nonce');
    const n2 = await nonce();
    const asAdmin = await register({ nonce: n2, username: 'mallory', password: PASSWORD, admin: true, mac });
    expect(asAdmin.status).toBe(403);
    expect(hs.accounts.has('mallory')).toBe(false);
  });

  it('the bridge signs nonce, username, password and "notadmin" with the shared secret', async () => {
    const good = new MatrixHomeserver({ url: hs.url, serverName: SERVER, registrationSharedSecret: SECRET });
    await expect(good.register('signed', PASSWORD)).resolves.toEqual({
      userId: '@signed:chat.test',
      accessToken: expect.any(String),
    });
    const wrong = new MatrixHomeserver({
      url: hs.url,
      serverName: SERVER,
      registrationSharedSecret: 'other',
    });
    await expect(wrong.register('unsigned', PASSWORD)).rejects.toMatchObject({
      code: 'BAD_GATEWAY',
      message: expect.stringContaining('HMAC incorrect'),
    });
    expect(hs.accounts.has('unsigned')).toBe(false);
  });

  it('an unreachable homeserver is a 502, not a crash', async () => {
    const gone = new MatrixHomeserver({
      url: 'http://127.0.0.1:1',
      serverName: SERVER,
      registrationSharedSecret: SECRET,
    });
    await expect(gone.register('nobody', PASSWORD)).rejects.toMatchObject({ code: 'BAD_GATEWAY' });
  });
});

describe('POST /api/v1/matrix/user/login', () => {
  beforeAll(async () => {
    await createUser('erin');
  });

  it('answers a new key for the right password, checked here and on the homeserver', async () => {
    const res = await login('erin', PASSWORD);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ api_key: expect.stringMatching(/^[\w-]{43}$/) });
    const list = await bridge().get('/api/v1/matrix/matterbridge').set('x-api-key', res.body.api_key);
    expect(list.status).toBe(200);
  });

  it('answers the same 401 for a wrong password and an unknown user', async () => {
    const wrong = await login('erin', 'Wrong-password-1');
    const unknown = await login('nobody-here', PASSWORD);
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    const body = { error: { code: 'UNAUTHENTICATED', message: 'wrong username or password' } };
    expect(wrong.body).toEqual(body);
    expect(unknown.body).toEqual(body);
  });

  it('answers 401 when the homeserver no longer accepts the password', async () => {
    await createUser('frank');
    hs.setPassword('frank', 'Changed-elsewhere-1');
    const res = await login('frank', PASSWORD);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('UNAUTHENTICATED');
  });

  it('throttles a username after repeated failures, whatever the address, with Retry-After', async () => {
    await createUser('grace');
    for (let i = 0; i < 3; i++) expect((await login('grace', 'Wrong-password-1')).status).toBe(401);
    for (const ip of [freshIp(), freshIp()]) {
      const res = await login('grace', PASSWORD, ip);
      expect(res.status).toBe(429);
      expect(res.body.error.code).toBe('RATE_LIMITED');
      const retryAfter = Number(res.headers['retry-after']);
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(900);
    }
    // Unknown names are throttled alike, so throttling tells nothing about who exists.
    for (let i = 0; i < 3; i++) await login('ghost', 'Wrong-password-1');
    expect((await login('ghost', 'Wrong-password-1')).status).toBe(429);
  });

  it('lets no more than the limit of concurrent wrong attempts through to the password check', async () => {
    await createUser('judith');
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => login('judith', 'Wrong-password-1', freshIp())),
    );
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(7);
  });

  it('throttles a client address that fails for many usernames', async () => {
    await createUser('heidi');
    const ip = freshIp();
    for (let i = 0; i < 6; i++) expect((await login(`nobody${i}`, 'Wrong-password-1', ip)).status).toBe(401);
    const blocked = await login('heidi', PASSWORD, ip);
    expect(blocked.status).toBe(429);
    expect(blocked.headers['retry-after']).toBeDefined();
    expect((await login('heidi', PASSWORD, freshIp())).status).toBe(200);
  });

  it('a successful login clears the username count', async () => {
    await createUser('ivan');
    for (let i = 0; i < 2; i++) await login('ivan', 'Wrong-password-1');
    expect((await login('ivan', PASSWORD)).status).toBe(200);
    for (let i = 0; i < 2; i++) await login('ivan', 'Wrong-password-1');
    expect((await login('ivan', PASSWORD)).status).toBe(200);
  });

  it('refuses malformed credentials with 400', async () => {
    const res = await bridge()
      .post('/api/v1/matrix/user/login')
      .send({ username: ['erin'], password: PASSWORD });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual({ username: 'must be a string' });
  });
});

describe('X-API-Key', () => {
  it.each([
    ['post', '/api/v1/matrix/dendrite'],
    ['get', '/api/v1/matrix/dendrite'],
    ['delete', '/api/v1/matrix/dendrite/00000000-0000-4000-8000-000000000000'],
    ['post', '/api/v1/matrix/matterbridge'],
    ['get', '/api/v1/matrix/matterbridge'],
  ] as const)('%s %s: 401 without a key and with an unknown key', async (method, url) => {
    const none = await bridge()[method](url).send({});
    expect(none.status).toBe(401);
    expect(none.body).toEqual({
      error: { code: 'UNAUTHENTICATED', message: 'send your API key in the X-API-Key header' },
    });
    const unknown = await bridge()[method](url).set('x-api-key', 'not-a-key').send({});
    expect(unknown.status).toBe(401);
    expect(unknown.body).toEqual({ error: { code: 'UNAUTHENTICATED', message: 'unknown API key' } });
  });
});

/** Ed25519 public key of a raw 32-byte seed (PKCS#8 wrapping), unpadded base64 as Matrix writes it. */
function publicKeyOfSeed(seed: Buffer): string {
  const der = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]);
  const jwk = createPublicKey(createPrivateKey({ key: der, format: 'der', type: 'pkcs8' })).export({
    format: 'jwk',
  });
  return Buffer.from(jwk.x!, 'base64url').toString('base64').replace(/=+$/, '');
}

const mode = async (file: string) => (await stat(file)).mode & 0o777;

describe('Dendrite instances', () => {
  let judy: string;
  let ken: string;
  beforeAll(async () => {
    judy = await createUser('judy');
    ken = await createUser('ken');
  });
  const { create, list } = endpoints<{
    id: string;
    hostname: string;
    port: number;
    key_id: string;
    public_key: string;
    status: string;
  }>('/api/v1/matrix/dendrite');

  it('writes the configuration and a fresh signing key, runs Dendrite, restarts it, and deletes it', async () => {
    const res = await create(judy, { hostname: 'judy.chat.test', port: '18448' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ message: 'success' });

    const [instance] = await list(judy);
    expect(instance).toEqual({
      id: expect.any(String),
      hostname: 'judy.chat.test',
      port: 18448,
      key_id: expect.stringMatching(/^ed25519:[A-Za-z0-9]{6}$/),
      public_key: expect.stringMatching(/^[A-Za-z0-9+/]{43}$/),
      status: 'running',
      created_at: expect.any(String),
    });
    const dir = path.join(t.config.dataDir, 'chat-bridge', 'dendrite', instance.id);
    const configFile = path.join(dir, 'dendrite.yaml');
    const keyFile = path.join(dir, 'matrix_key.pem');

    const config = YAML.parse(await readFile(configFile, 'utf8'));
    expect(config.version).toBe(2);
    expect(config.global).toMatchObject({ server_name: 'judy.chat.test', private_key: keyFile });
    expect(config.client_api).toMatchObject({ registration_disabled: true, guests_disabled: true });
    expect(config.client_api.registration_shared_secret).toMatch(/^[\w-]{43}$/);
    const databases = [
      config.federation_api.database,
      config.key_server.database,
      config.media_api.database,
      config.mscs.database,
      config.relay_api.database,
      config.room_server.database,
      config.sync_api.database,
      config.user_api.account_database,
    ].map((d: { connection_string: string }) => d.connection_string);
    expect(new Set(databases).size).toBe(8);
    for (const db of databases) expect(db.startsWith(`file:${dir}/`)).toBe(true);
    expect(config.media_api.base_path.startsWith(dir)).toBe(true);
    expect(config.global.jetstream.storage_path.startsWith(dir)).toBe(true);

    const pem = await readFile(keyFile, 'utf8');
    const match =
      /^-----BEGIN MATRIX PRIVATE KEY-----\nKey-ID: (ed25519:\w+)\n\n([A-Za-z0-9+/=]+)\n-----END MATRIX PRIVATE KEY-----\n$/.exec(
        pem,
      );
    expect(match).not.toBeNull();
    expect(match![1]).toBe(instance.key_id);
    const seed = Buffer.from(match![2], 'base64');
    expect(seed).toHaveLength(32);
    expect(publicKeyOfSeed(seed)).toBe(instance.public_key);
    expect(await mode(keyFile)).toBe(0o600);
    expect(await mode(configFile)).toBe(0o600);
    expect(await mode(dir)).toBe(0o700);

    const first = await eventually(async () =>
      (await stubs.dendrite.records()).find((r) => r.argv.includes(configFile)),
    );
    expect(first.argv).toEqual(['--config', configFile, '--http-bind-address', '127.0.0.1:18448']);
    expect(first.cwd).toBe(dir);
    // A minimal environment, as jobs get: nothing of the service's (its secrets above all).
    expect(first.env).toEqual({ PATH: t.config.localExecutorPath, HOME: dir, TMPDIR: dir, LANG: 'C.UTF-8' });

    // A crash is followed by a restart with the same arguments.
    process.kill(first.pid, 'SIGKILL');
    const second = await eventually(async () =>
      (await stubs.dendrite.records()).find((r) => r.argv.includes(configFile) && r.pid !== first.pid),
    );
    expect(second.argv).toEqual(first.argv);
    await eventually(async () => (await list(judy))[0].status === 'running');

    const deleted = await bridge().delete(`/api/v1/matrix/dendrite/${instance.id}`).set('x-api-key', judy);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect(isAlive(second.pid)).toBe(false);
    expect(existsSync(dir)).toBe(false);
    expect(await list(judy)).toEqual([]);
  });

  it('keeps ports and host names unique across all users (409)', async () => {
    expect((await create(judy, { hostname: 'one.chat.test', port: '18450' })).status).toBe(201);
    const samePort = await create(ken, { hostname: 'two.chat.test', port: '18450' });
    expect(samePort.status).toBe(409);
    expect(samePort.body).toEqual({
      error: { code: 'CONFLICT', message: 'port 18450 is used by another instance' },
    });
    const sameName = await create(ken, { hostname: 'one.chat.test', port: 18451 });
    expect(sameName.status).toBe(409);
    expect(sameName.body.error.message).toBe('hostname one.chat.test is used by another instance');
    expect(await list(ken)).toEqual([]);
  });

  it.each([
    [{ hostname: 'Upper.chat.test', port: '18460' }, 'hostname', 'must be lowercase'],
    [{ hostname: 'under_score.test', port: '18460' }, 'hostname', 'must be a host name'],
    [{ hostname: '-lead.test', port: '18460' }, 'hostname', 'must be a host name'],
    [{ hostname: '10.0.0.1', port: '18460' }, 'hostname', 'not an IP address'],
    [{ hostname: `${'a'.repeat(64)}.test`, port: '18460' }, 'hostname', 'must be a host name'],
    [{ port: '18460' }, 'hostname', 'is required'],
    [{ hostname: 'ok.test', port: '80' }, 'port', 'from 1024 to 65535'],
    [{ hostname: 'ok.test', port: '70000' }, 'port', 'from 1024 to 65535'],
    [{ hostname: 'ok.test', port: '18460x' }, 'port', 'from 1024 to 65535'],
    [{ hostname: 'ok.test', port: 18460.5 }, 'port', 'from 1024 to 65535'],
    [{ hostname: 'ok.test' }, 'port', 'is required'],
  ])('refuses %j', async (body, field, problem) => {
    const res = await create(judy, body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(res.body.error.details[field]).toContain(problem);
  });

  it("refuses the service's own ports", async () => {
    const res = await create(judy, { hostname: 'self.test', port: String(t.config.bridgePort) });
    expect(res.status).toBe(400);
    expect(res.body.error.details.port).toBe('is used by this service itself');
  });

  it("isolates users: another user's instance is 404 and untouched", async () => {
    expect((await create(judy, { hostname: 'mine.chat.test', port: '18470' })).status).toBe(201);
    const mine = (await list(judy)).find((i) => i.hostname === 'mine.chat.test')!;
    expect((await list(ken)).map((i) => i.id)).not.toContain(mine.id);
    const theirs = await bridge().delete(`/api/v1/matrix/dendrite/${mine.id}`).set('x-api-key', ken);
    expect(theirs.status).toBe(404);
    expect(theirs.body.error.code).toBe('NOT_FOUND');
    expect((await bridge().delete('/api/v1/matrix/dendrite/not-a-uuid').set('x-api-key', ken)).status).toBe(
      404,
    );
    expect((await list(judy)).find((i) => i.id === mine.id)?.status).toBe('running');
  });

  it('pages lists with limit, cursor and a Link header', async () => {
    const all = await list(judy);
    expect(all.length).toBeGreaterThanOrEqual(2);
    const first = await bridge().get('/api/v1/matrix/dendrite?limit=1').set('x-api-key', judy);
    expect(first.body.map((i: { id: string }) => i.id)).toEqual([all[0].id]);
    const next = /^<([^>]+)>; rel="next"$/.exec(first.headers.link)![1];
    const second = await bridge().get(next).set('x-api-key', judy);
    expect(second.body.map((i: { id: string }) => i.id)).toEqual([all[1].id]);
  });
});

describe('matterbridge bridges', () => {
  let leo: string;
  let mia: string;
  beforeAll(async () => {
    leo = await createUser('leo');
    mia = await createUser('mia');
  });
  const { create, list } = endpoints<Record<string, unknown>>('/api/v1/matrix/matterbridge');
  const discord = {
    name: 'general-chat',
    conf: { platform: 'discord', token: 'discord-bot-token-secret', channel: 'general', server: 'My Guild' },
  };

  it('joins the platform channel and a new Matrix room of the user in one gateway, and runs matterbridge', async () => {
    const res = await create(leo, discord);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ network_name: 'leo_general-chat', status: 'success' });

    const [item] = await list(leo);
    expect(item).toEqual({
      id: expect.any(String),
      name: 'general-chat',
      network_name: 'leo_general-chat',
      platform: 'discord',
      channel: 'general',
      server: 'My Guild',
      team: null,
      nick: null,
      matrix_room_id: expect.stringMatching(/^!.+:chat\.test$/),
      matrix_room_alias: '#leo_general-chat:chat.test',
      status: 'running',
      created_at: expect.any(String),
    });
    expect(hs.rooms.get(item.matrix_room_id as string)).toEqual({
      creator: '@leo:chat.test',
      name: 'general-chat',
      preset: 'private_chat',
    });
    expect(hs.aliases.get('#leo_general-chat:chat.test')?.roomId).toBe(item.matrix_room_id);

    const dir = path.join(t.config.dataDir, 'chat-bridge', 'matterbridge', item.id as string);
    const file = path.join(dir, 'matterbridge.toml');
    expect(await mode(file)).toBe(0o600);
    const [leoToken] = hs.accounts.get('leo')!.tokens;
    expect(parseToml(await readFile(file, 'utf8'))).toEqual({
      general: { RemoteNickFormat: '[{PROTOCOL}] <{NICK}> ' },
      discord: { 'general-chat': { Token: 'discord-bot-token-secret', Server: 'My Guild' } },
      matrix: {
        'general-chat': {
          Server: hs.url,
          MxID: '@leo:chat.test',
          Token: leoToken,
          NoHomeServerSuffix: false,
        },
      },
      gateway: [
        {
          name: 'leo_general-chat',
          enable: true,
          inout: [
            { account: 'discord.general-chat', channel: 'general' },
            { account: 'matrix.general-chat', channel: '#leo_general-chat:chat.test' },
          ],
        },
      ],
    });

    const run = await eventually(async () =>
      (await stubs.matterbridge.records()).find((r) => r.argv.includes(file)),
    );
    expect(run.argv).toEqual(['-conf', file]);
    expect(Object.keys(run.env).sort()).toEqual(['HOME', 'LANG', 'PATH', 'TMPDIR']);

    // The platform token is sealed at rest and never answered.
    expect(JSON.stringify(await list(leo))).not.toContain('discord-bot-token-secret');
    const [row] = await sql<{ token_sealed: string }>(`select token_sealed from chat_bridge_matterbridges`);
    expect(row.token_sealed).toMatch(/^v1\./);
    expect(row.token_sealed).not.toContain('discord-bot-token-secret');

    const again = await create(leo, discord);
    expect(again.status).toBe(409);
    expect(again.body.error.message).toBe('you already have a bridge named general-chat');

    // Another user may use the same name: it is scoped to its owner.
    expect((await create(mia, discord)).status).toBe(201);

    const deleted = await bridge().delete(`/api/v1/matrix/matterbridge/${item.id}`).set('x-api-key', leo);
    expect(deleted.status).toBe(204);
    expect(isAlive(run.pid)).toBe(false);
    expect(existsSync(dir)).toBe(false);
    expect(await list(leo)).toEqual([]);
    // The alias is freed, so the name can be used again (with a new room).
    expect(hs.aliases.has('#leo_general-chat:chat.test')).toBe(false);
    expect((await create(leo, discord)).status).toBe(201);
    const [recreated] = await list(leo);
    expect(recreated.matrix_room_id).not.toBe(item.matrix_room_id);
  });

  it('answers 409 when the room alias is taken on the homeserver by someone else', async () => {
    hs.aliases.set('#leo_squatted:chat.test', { roomId: '!other:chat.test', creator: '@eve:chat.test' });
    const res = await create(leo, { ...discord, name: 'squatted' });
    expect(res.status).toBe(409);
    expect(res.body.error.message).toBe(
      'the Matrix room alias #leo_squatted:chat.test is taken on the homeserver',
    );
    expect((await list(leo)).map((b) => b.name)).not.toContain('squatted');
  });

  it('writes the account each platform needs (xmpp: the room on its MUC service)', async () => {
    const res = await create(leo, {
      name: 'jabber',
      conf: {
        platform: 'xmpp',
        token: 'xmpp password with spaces',
        channel: 'lounge@conference.example.org',
        server: 'xmpp.example.org:5222',
        nick: 'bot@example.org',
      },
    });
    expect(res.status).toBe(201);
    const item = (await list(leo)).find((b) => b.name === 'jabber')!;
    const toml = parseToml(
      await readFile(
        path.join(t.config.dataDir, 'chat-bridge', 'matterbridge', item.id as string, 'matterbridge.toml'),
        'utf8',
      ),
    ) as { xmpp: Record<string, unknown>; gateway: { inout: { channel: string }[] }[] };
    expect(toml.xmpp.jabber).toEqual({
      Server: 'xmpp.example.org:5222',
      Jid: 'bot@example.org',
      Password: 'xmpp password with spaces',
      Muc: 'conference.example.org',
      Nick: 'bot',
    });
    expect(toml.gateway[0].inout[0].channel).toBe('lounge');
  });

  it.each([
    [{ ...discord, name: 'Bad Name' }, 'name', 'must be 1-63 characters'],
    [{ name: 'x', conf: 'discord' }, 'conf', 'must be an object'],
    [
      { name: 'x', conf: { ...discord.conf, platform: 'myspace' } },
      'conf.platform',
      'must be one of discord, slack',
    ],
    [{ name: 'x', conf: { ...discord.conf, platform: undefined } }, 'conf.platform', 'is required'],
    [{ name: 'x', conf: { ...discord.conf, channel: 'gen\neral' } }, 'conf.channel', 'control characters'],
    // The rule of every string input (src/common/text.ts).
    [{ name: 'x', conf: { ...discord.conf, token: 'tok\u0000en' } }, 'conf.token', 'NUL characters'],
    [{ name: 'x', conf: { ...discord.conf, token: '' } }, 'conf.token', 'is required'],
    [{ name: 'x', conf: { ...discord.conf, server: undefined } }, 'conf.server', 'is required for discord'],
    [
      { name: 'x', conf: { platform: 'telegram', token: 't', channel: 'general' } },
      'conf.channel',
      'numeric chat id',
    ],
    [
      {
        name: 'x',
        conf: { platform: 'irc', channel: 'nohash', server: 'irc.example.org:6697', nick: 'bot' },
      },
      'conf.channel',
      'starting with #',
    ],
    [
      { name: 'x', conf: { platform: 'irc', channel: '#ok', server: 'irc.example.org', nick: 'bot' } },
      'conf.server',
      'host name and port',
    ],
    [
      {
        name: 'x',
        conf: { platform: 'mattermost', token: 't', channel: 'town-square', server: 'mm.example.org' },
      },
      'conf.team',
      'is required for mattermost',
    ],
  ])('refuses %j', async (body, field, problem) => {
    const res = await create(leo, body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(res.body.error.details[field]).toContain(problem);
  });

  it('accepts IRC without a token', async () => {
    const res = await create(leo, {
      name: 'irc',
      conf: { platform: 'irc', channel: '#media', server: 'irc.example.org:6697', nick: 'mediabot' },
    });
    expect(res.status).toBe(201);
  });

  it("isolates users: another user's bridge is 404 and untouched", async () => {
    expect((await create(leo, { ...discord, name: 'private' })).status).toBe(201);
    const mine = (await list(leo)).find((b) => b.name === 'private')!;
    expect((await list(mia)).map((b) => b.id)).not.toContain(mine.id);
    const theirs = await bridge().delete(`/api/v1/matrix/matterbridge/${mine.id}`).set('x-api-key', mia);
    expect(theirs.status).toBe(404);
    expect((await list(leo)).find((b) => b.id === mine.id)?.status).toBe('running');
  });
});

describe('the bridge role in the runtime', () => {
  it('answers 503 for user creation when no homeserver is configured', async () => {
    const app = await startTestApp();
    try {
      const res = await request(app.bridgeUrl!)
        .post('/api/v1/matrix/user')
        .send({ username: 'x', password: PASSWORD });
      expect(res.status).toBe(503);
      expect(res.body).toEqual({
        error: {
          code: 'UNAVAILABLE',
          message: 'no Matrix homeserver is configured (set MATRIX_HOMESERVER_URL)',
        },
      });
    } finally {
      await app.close();
    }
  });

  it('stops supervised processes when the runtime stops and resumes them when it starts again', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'bridge-resume-'));
    const env = {
      MATRIX_HOMESERVER_URL: hs.url,
      MATRIX_REGISTRATION_SHARED_SECRET: SECRET,
      MATRIX_SERVER_NAME: SERVER,
      DENDRITE_BIN: stubs.dendrite.path,
      MATTERBRIDGE_BIN: stubs.matterbridge.path,
      DATA_DIR: dataDir,
    };
    const first = await startTestApp(env);
    const ofThisRun = async () =>
      [...(await stubs.dendrite.records()), ...(await stubs.matterbridge.records())].filter((r) =>
        r.cwd.startsWith(dataDir),
      );
    let pids: number[];
    try {
      const key = (
        await request(first.bridgeUrl!)
          .post('/api/v1/matrix/user')
          .send({ username: 'nina', password: PASSWORD })
      ).body.api_key as string;
      const post = (url: string, body: object) =>
        request(first.bridgeUrl!).post(url).set('x-api-key', key).send(body);
      expect(
        (await post('/api/v1/matrix/dendrite', { hostname: 'nina.chat.test', port: '18480' })).status,
      ).toBe(201);
      expect(
        (
          await post('/api/v1/matrix/matterbridge', {
            name: 'tg',
            conf: { platform: 'telegram', token: '1:x', channel: '-100' },
          })
        ).status,
      ).toBe(201);
      pids = (await eventually(async () => ((await ofThisRun()).length === 2 ? ofThisRun() : null))).map(
        (r) => r.pid,
      );
      expect(pids.every(isAlive)).toBe(true);
    } finally {
      await first.close();
    }
    expect(pids.some(isAlive)).toBe(false);

    const second = await startTestApp(env, { databaseUrl: first.databaseUrl });
    let newPids: number[] = [];
    try {
      const resumed = await eventually(async () => ((await ofThisRun()).length === 4 ? ofThisRun() : null));
      newPids = resumed.map((r) => r.pid).filter((pid) => !pids.includes(pid));
      expect(newPids).toHaveLength(2);
      expect(newPids.every(isAlive)).toBe(true);
    } finally {
      await second.close();
    }
    expect(newPids.some(isAlive)).toBe(false);
  });
});
