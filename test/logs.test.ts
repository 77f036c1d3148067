import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../src/common/logger';
import { startTestApp, type TestApp } from './helpers/app';
import { BUILTIN, waitForJob } from './helpers/jobs';
import { TestHomeserver } from './helpers/matrix-homeserver';
import { pngBytes, uploadFile } from './helpers/media';
import { eventually, writeStub } from './helpers/stub-process';

/**
 * The service's own log lines, read as an operator would: request lines name the principal and
 * the GraphQL operation, jobs tell their life, and no credential ever shows, whatever carried it.
 */

const SHARED_SECRET = 'registration-secret-for-logs';
const lines: Record<string, unknown>[] = [];
const raw: string[] = [];
let t: TestApp;
let hs: TestHomeserver;

const text = () => raw.join('');
const find = (msg: string, match: (l: Record<string, unknown>) => boolean = () => true) =>
  lines.filter((l) => l.msg === msg && match(l));

beforeAll(async () => {
  hs = await TestHomeserver.start(SHARED_SECRET, 'chat.test');
  const stubs = await mkdtemp(path.join(os.tmpdir(), 'logs-stubs-'));
  const log = createLogger('debug', {
    apiKeyHeader: 'x-service-key',
    destination: {
      write: (line: string) => {
        raw.push(line);
        lines.push(JSON.parse(line));
      },
    },
  });
  t = await startTestApp(
    {
      MATRIX_HOMESERVER_URL: hs.url,
      MATRIX_REGISTRATION_SHARED_SECRET: SHARED_SECRET,
      MATRIX_SERVER_NAME: 'chat.test',
      MATTERBRIDGE_BIN: (await writeStub(stubs, 'matterbridge')).path,
      DENDRITE_BIN: (await writeStub(stubs, 'dendrite')).path,
    },
    { log },
  );
});
afterAll(async () => {
  await t?.close();
  await hs?.stop();
});

describe('request lines', () => {
  it('name the principal and the GraphQL operation, over GraphQL and REST', async () => {
    const token = await t.tokenFor('alice');
    await t.gql('query MyTeams { teams { nodes { id } } }', {}, `Bearer ${token}`);
    await t.http().get('/api/v1/teams').set('authorization', `Bearer ${token}`).set('x-request-id', 'rest-1');
    await eventually(() => find('request completed').length >= 2);
    const [gql] = find('request completed', (l) => l.operation === 'MyTeams');
    if (!gql) throw new Error(JSON.stringify(find('request completed')));
    expect(gql).toMatchObject({ principal: { userId: expect.any(String), credential: 'user_token' } });
    const [rest] = find('request completed', (l) => (l.req as { id?: string }).id === 'rest-1');
    expect(rest).toMatchObject({
      operation: 'ListTeams',
      principal: { userId: (gql.principal as { userId: string }).userId },
    });
    expect(text()).not.toContain(token);
  });
});

describe('no credential is ever logged', () => {
  it('user tokens, API keys (either header), cookies and secrets in query strings', async () => {
    const token = await t.tokenFor('bob');
    const created = await t
      .http()
      .post('/api/v1/tokens')
      .set('authorization', `Bearer ${token}`)
      .send({ name: 'ci' });
    const key = created.body.token as string;
    await t.http().get('/api/v1/teams').set('x-service-key', key).expect(200);
    await t.http().get('/api/v1/teams').set('authorization', `Bearer ${key}`).expect(200);
    await t.http().get('/api/v1/teams').set('authorization', 'Bearer not-a-valid-credential-abc').expect(401);
    await t.http().get('/api/v1/fetch-metadata').set('cookie', 'auth_session=cookie-secret-value-123');
    await t.http().get('/api/v1/auth/callback?code=one-time-code-456&state=st-789');
    await uploadFile(t, `Bearer ${token}`, pngBytes(4, 4));
    await eventually(
      () =>
        find('request completed', (l) =>
          String((l.req as { url: string }).url).startsWith('/api/v1/auth/callback'),
        ).length > 0,
    );
    const all = text();
    for (const secret of [
      token,
      key,
      'not-a-valid-credential-abc',
      'cookie-secret-value-123',
      'one-time-code-456',
    ])
      expect(all).not.toContain(secret);
    const [keyLine] = find(
      'request completed',
      (l) => (l.principal as { apiKeyId?: string } | undefined)?.apiKeyId === created.body.id,
    );
    expect(keyLine).toBeDefined();
    expect(all).toContain('[redacted]');
  });

  it("the chat bridge's passwords, keys, platform tokens and homeserver tokens", async () => {
    const password = 'Bridge-password-logs-1';
    const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${t.bridgeUrl}${url}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    expect((await post('/api/v1/matrix/user', { username: 'logger', password })).status).toBe(201);
    const login = await post('/api/v1/matrix/user/login', { username: 'logger', password });
    const apiKey = ((await login.json()) as { api_key: string }).api_key;
    expect(
      (await post('/api/v1/matrix/user/login', { username: 'logger', password: 'Wrong-pass-9' })).status,
    ).toBe(401);
    const bridged = await post(
      '/api/v1/matrix/matterbridge',
      {
        name: 'general',
        conf: { platform: 'discord', token: 'discord-token-in-logs-0', channel: 'general', server: 'G' },
      },
      { 'x-api-key': apiKey },
    );
    expect(bridged.status).toBe(201);
    await eventually(
      () =>
        find('request completed', (l) => (l.req as { url: string }).url === '/api/v1/matrix/matterbridge')
          .length > 0,
    );
    const all = text();
    const homeserverTokens = hs.accounts.get('logger')!.tokens;
    expect(homeserverTokens.size).toBeGreaterThan(0);
    for (const secret of [
      password,
      'Wrong-pass-9',
      apiKey,
      'discord-token-in-logs-0',
      SHARED_SECRET,
      ...homeserverTokens,
    ])
      expect(all).not.toContain(secret);
  });
});

describe('job lines', () => {
  it('tell a job created, started on its executor, and ended with state, duration and exit code', async () => {
    const auth = `Bearer ${await t.tokenFor('carol')}`;
    const media = (await uploadFile(t, auth, pngBytes(4, 4))).body.media.id;
    const res = await t
      .http()
      .post('/api/v1/deployments')
      .set('authorization', auth)
      .send({ name: 'count', model_id: BUILTIN.wordcount, args: { text: media } });
    expect(res.status).toBe(201);
    const jobs = await t.http().get('/api/v1/jobs').set('authorization', auth);
    const jobId = jobs.body[0].id as string;
    const job = await waitForJob(t, auth, jobId);
    await eventually(() => find('job ended', (l) => l.jobId === jobId).length === 1);
    expect(find('job created', (l) => l.jobId === jobId)).toEqual([
      expect.objectContaining({ deploymentId: res.body.id, modelId: BUILTIN.wordcount }),
    ]);
    expect(find('job started', (l) => l.jobId === jobId)).toEqual([
      expect.objectContaining({ executor: 'local', externalId: job.externalId }),
    ]);
    expect(find('job ended', (l) => l.jobId === jobId)).toEqual([
      expect.objectContaining({
        state: 'succeeded',
        exitCode: 0,
        runSeconds: job.runSeconds,
        totalSeconds: expect.any(Number),
      }),
    ]);
  });
});
