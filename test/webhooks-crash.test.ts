import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createTestDatabase } from './helpers/db';
import { BUILTIN, PROGRAM } from './helpers/jobs';
import { until } from './helpers/media';
import { TestIssuer } from './helpers/oidc-issuer';
import { spawnService, type Spawned } from './helpers/process';
import { verifySignature, WebhookReceiver } from './helpers/webhook-receiver';

jest.setTimeout(240_000);

interface Delivery {
  id: string;
  status: string;
  attempts: { attempt: number; outcome: string; response_code: number | null; error: string | null }[];
}

/** REST calls to a service on `port`, as a REST-only client makes them. */
function api(port: number, auth: string) {
  return async (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`http://127.0.0.1:${port}${url}`, {
      method,
      headers: { authorization: auth, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> & unknown[] };
  };
}

describe('webhooks and retries across kill -9 of the service', () => {
  let issuer: TestIssuer;
  let dataDir: string;
  let env: Record<string, string>;
  let receiver: WebhookReceiver;
  let port: number;
  const services: (Spawned & { port: number })[] = [];

  beforeAll(async () => {
    issuer = await TestIssuer.start();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'media-webhook-crash-'));
    await chmod(dataDir, 0o755);
    receiver = await WebhookReceiver.start();
    port = receiver.port;
    env = {
      DATABASE_URL: await createTestDatabase(),
      OIDC_ISSUER: issuer.issuer,
      DATA_DIR: dataDir,
      LOCAL_EXECUTOR_TRUST: 'any',
      ROLES: 'api,worker',
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE: `127.0.0.1:${port}`,
      WEBHOOK_TIMEOUT_SECONDS: '2',
    };
  });
  afterAll(async () => {
    for (const s of services) if (s.child.exitCode === null) s.child.kill('SIGKILL');
    await receiver.close();
    await issuer.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  async function start(): Promise<number> {
    const s = await spawnService(env);
    services.push(s);
    return s.port;
  }

  async function kill(): Promise<void> {
    const s = services.at(-1)!;
    s.child.kill('SIGKILL');
    await s.exited;
  }

  it('delivers one verified `completed` message across a receiver outage and a restart, and retries the job the crash failed', async () => {
    const auth = `Bearer ${await issuer.token('erin')}`;
    let call = api(await start(), auth);
    const secret = (await call('GET', '/api/v1/webhooks/default/secret')).body.key as string;
    // The receiver is down.
    await receiver.close();

    const upload = await fetch(`http://127.0.0.1:${services.at(-1)!.port}/uploads/upload`, {
      method: 'POST',
      headers: { authorization: auth },
      body: (() => {
        const form = new FormData();
        form.append('file', new Blob(['one two\n']), 'w.txt');
        return form;
      })(),
    });
    const text = ((await upload.json()) as { media: { id: string } }).media.id;
    const created = await call('POST', '/api/v1/deployments', {
      name: 'hooked',
      model_id: BUILTIN.wordcount,
      args: { text },
      webhook: `http://127.0.0.1:${port}/outage`,
    });
    expect(created.status).toBe(201);
    const jobId = (
      (await call('GET', `/api/v1/deployments/${created.body.id as string}`)).body.job as { id: string }
    ).id;
    // A job the crash will interrupt; its model allows one automatic retry.
    const idle = await call('POST', '/api/v1/models', {
      name: 'idle',
      container: 'local',
      command: `node "${PROGRAM}" idle {args}`,
      args: {},
      max_retries: 1,
    });
    const interrupted = await call('POST', '/api/v1/deployments', {
      name: 'idle',
      model_id: idle.body.id,
      args: {},
    });
    const interruptedJob = (
      (await call('GET', `/api/v1/deployments/${interrupted.body.id as string}`)).body.job as { id: string }
    ).id;

    const failing = await until(
      async () =>
        (await call('GET', `/api/v1/jobs/${jobId}/webhook-deliveries`)).body as unknown as Delivery[],
      (d) => d.length === 1 && d[0].attempts.length >= 1,
      30000,
    );
    expect(failing[0].attempts[0]).toMatchObject({ outcome: 'retry', response_code: null });
    await until(
      async () => (await call('GET', `/api/v1/jobs/${interruptedJob}`)).body.status,
      (s) => s === 'running',
      30000,
    );
    await kill();

    // The receiver comes back, then the service.
    receiver = await WebhookReceiver.start(port);
    call = api(await start(), auth);
    await receiver.until((r) => r.some((x) => x.path === '/outage'), 90_000);
    const [message] = receiver.to('/outage');
    expect(message.headers['webhook-id']).toBe(failing[0].id);
    expect(verifySignature(secret, message)).toBe(true);
    expect(JSON.parse(message.body)).toMatchObject({ id: jobId, status: 'succeeded' });
    const delivered = await until(
      async () =>
        (await call('GET', `/api/v1/jobs/${jobId}/webhook-deliveries`)).body as unknown as Delivery[],
      (d) => d[0].status === 'delivered',
    );
    expect(delivered[0].attempts.at(-1)).toMatchObject({ outcome: 'delivered', response_code: 200 });
    expect(delivered[0].attempts.slice(0, -1).every((a) => a.outcome !== 'delivered')).toBe(true);
    expect(receiver.to('/outage')).toHaveLength(1);

    // The job the crash stopped failed as an infrastructure failure and runs again, attempt 2.
    const first = await until(
      async () => (await call('GET', `/api/v1/jobs/${interruptedJob}`)).body,
      (j) => j.status === 'failed',
      60000,
    );
    expect(first).toMatchObject({ infrastructure_failure: true, attempt: 1 });
    const retry = await until(
      async () =>
        (await call('GET', `/api/v1/deployments/${interrupted.body.id as string}`)).body.job as Record<
          string,
          unknown
        >,
      (j) => j.status === 'running',
      30000,
    );
    expect(retry).toMatchObject({ retry_of: interruptedJob, attempt: 2 });
    await call('POST', `/api/v1/jobs/${retry.id as string}/cancel`);
  });

  it('makes the next attempt after a kill -9 during an attempt, under the same webhook-id', async () => {
    const auth = `Bearer ${await issuer.token('erin')}`;
    let call = api(services.at(-1)!.port, auth);
    const secret = (await call('GET', '/api/v1/webhooks/default/secret')).body.key as string;
    receiver.answer('/hang', { hang: true });
    const model = await call('POST', '/api/v1/models', {
      name: 'argv',
      container: 'local',
      command: `node "${PROGRAM}" argv {args}`,
      args: {},
    });
    const created = await call('POST', '/api/v1/deployments', {
      name: 'hang',
      model_id: model.body.id,
      args: {},
      webhook: `http://127.0.0.1:${port}/hang`,
    });
    expect(created.status).toBe(201);
    // The first attempt is under way: the receiver holds it.
    await receiver.until((r) => r.some((x) => x.path === '/hang'), 60_000);
    await kill();

    call = api(await start(), auth);
    await receiver.until((r) => r.filter((x) => x.path === '/hang').length === 2, 120_000);
    const [held, again] = receiver.to('/hang');
    expect(again.headers['webhook-id']).toBe(held.headers['webhook-id']);
    expect(again.body).toBe(held.body);
    expect(verifySignature(secret, again)).toBe(true);
    const jobId = (
      (await call('GET', `/api/v1/deployments/${created.body.id as string}`)).body.job as { id: string }
    ).id;
    const delivered = await until(
      async () =>
        (await call('GET', `/api/v1/jobs/${jobId}/webhook-deliveries`)).body as unknown as Delivery[],
      (d) => d[0].status === 'delivered',
    );
    expect(delivered[0].attempts.map((a) => a.outcome)).toEqual(['interrupted', 'delivered']);

    const last = services.at(-1)!;
    last.child.kill('SIGTERM');
    expect(await last.exited).toBe(0);
  });
});
