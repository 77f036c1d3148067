import { startTestApp, type TestApp } from './helpers/app';
import { BUILTIN, deploy, PROGRAM, programModel, waitForJob } from './helpers/jobs';
import { uploadFile } from './helpers/media';
import { verifySignature, WebhookReceiver, type Received } from './helpers/webhook-receiver';

jest.setTimeout(120_000);

let t: TestApp;
let receiver: WebhookReceiver;
let alice: string;
let bob: string;

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  t = await startTestApp({
    LOCAL_EXECUTOR_TRUST: 'any',
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOW_PRIVATE: `127.0.0.1:${receiver.port}`,
    WEBHOOK_TIMEOUT_SECONDS: '2',
  });
  alice = `Bearer ${await t.tokenFor('alice')}`;
  bob = `Bearer ${await t.tokenFor('bob')}`;
});
afterAll(async () => {
  await t.close();
  await receiver.close();
});

let hooks = 0;
/** A fresh path on the receiver, so each test counts its own requests. */
const newHook = () => `/hook-${++hooks}`;

async function secretOf(auth: string): Promise<string> {
  const res = await t.http().get('/api/v1/webhooks/default/secret').set('authorization', auth);
  expect(res.status).toBe(200);
  return res.body.key;
}

async function wordcount(auth: string, body: Record<string, unknown>) {
  const text = (await uploadFile(t, auth, Buffer.from('a b c\n'), 'w.txt')).body.media.id;
  const res = await t
    .http()
    .post('/api/v1/deployments')
    .set('authorization', auth)
    .send({ name: 'hooked', model_id: BUILTIN.wordcount, args: { text }, ...body });
  return res;
}

async function jobIdOf(auth: string, deploymentId: string): Promise<string> {
  return (await t.http().get(`/api/v1/deployments/${deploymentId}`).set('authorization', auth)).body.job.id;
}

async function deliveries(auth: string, jobId: string) {
  const res = await t.http().get(`/api/v1/jobs/${jobId}/webhook-deliveries`).set('authorization', auth);
  expect(res.status).toBe(200);
  return res.body as {
    id: string;
    event: string;
    status: string;
    attempts: {
      attempt: number;
      outcome: string;
      response_code: number | null;
      duration_ms: number;
      error: string | null;
      response: string | null;
    }[];
  }[];
}

/** Graphile-worker tasks still queued for a message (none once it is delivered or given up). */
async function tasksOf(messageId: string): Promise<number> {
  const [row] = await t.runtime.orm.em
    .fork()
    .execute(`select count(*)::int as n from graphile_worker._private_jobs where key = ?`, [
      `webhook:${messageId}`,
    ]);
  return row.n;
}

describe('a deployment with a webhook', () => {
  it('gets one signed `completed` message carrying the job as GET /api/v1/jobs/{id} shows it', async () => {
    const path = newHook();
    const secret = await secretOf(alice);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const res = await wordcount(alice, { webhook: receiver.url(path) });
    expect(res.status).toBe(201);
    const jobId = await jobIdOf(alice, res.body.id);
    const [message] = await receiver
      .until(() => receiver.to(path).length === 1)
      .then(() => receiver.to(path));
    expect(verifySignature(secret, message)).toBe(true);
    expect(message.headers['content-type']).toBe('application/json');
    const body = JSON.parse(message.body);
    const job = await t.http().get(`/api/v1/jobs/${jobId}`).set('authorization', alice);
    expect(body).toEqual(job.body);
    expect(body.status).toBe('succeeded');

    const listed = await deliveries(alice, jobId);
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({
      id: message.headers['webhook-id'],
      event: 'completed',
      status: 'delivered',
    });
    expect(listed[0].attempts).toEqual([
      expect.objectContaining({ attempt: 1, outcome: 'delivered', response_code: 200, error: null }),
    ]);
    expect(await tasksOf(listed[0].id)).toBe(0);
    // A tampered body or another owner's key does not verify.
    expect(verifySignature(secret, { ...message, body: message.body.replace('succeeded', 'failed') })).toBe(
      false,
    );
    expect(verifySignature(await secretOf(bob), message)).toBe(false);
    // The deployment shows its webhook and the default filter.
    const deployment = await t.http().get(`/api/v1/deployments/${res.body.id}`).set('authorization', alice);
    expect(deployment.body).toMatchObject({
      webhook: receiver.url(path),
      webhook_events_filter: ['completed'],
    });
  });

  it('is retried on 429 (honouring Retry-After), 5xx and timeouts, with the same webhook-id, until delivered', async () => {
    const path = newHook();
    // The 500 comes with a long answer, of which only the start is read and kept.
    receiver.answer(
      path,
      { status: 429, retryAfter: '3' },
      { status: 500, body: 'x'.repeat(256 * 1024) },
      { hang: true },
      { status: 200 },
    );
    const res = await wordcount(alice, { webhook: receiver.url(path) });
    const jobId = await jobIdOf(alice, res.body.id);
    await receiver.until(() => receiver.to(path).some((r) => r.answered === 200));
    const got = receiver.to(path);
    expect(got.map((r) => r.answered)).toEqual([429, 500, null, 200]);
    const secret = await secretOf(alice);
    expect(got.every((r) => verifySignature(secret, r))).toBe(true);
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(new Set(got.map((r) => r.body)).size).toBe(1);
    // Retry-After: 3 was honoured although the backoff would have waited about a second.
    expect(got[1].at - got[0].at).toBeGreaterThanOrEqual(3000);

    const [listed] = await deliveries(alice, jobId);
    expect(listed.status).toBe('delivered');
    expect(listed.attempts.map((a) => [a.outcome, a.response_code])).toEqual([
      ['retry', 429],
      ['retry', 500],
      ['retry', null],
      ['delivered', 200],
    ]);
    expect(listed.attempts[2].error).toMatch(/no answer within 2000 ms/);
    expect(listed.attempts[1].response).toBe('x'.repeat(512));
    expect(listed.attempts[3].response).toBe('ok');
    expect(await tasksOf(listed.id)).toBe(0);
  });

  it('is not retried after another 4xx, nor after a redirect, which is not followed', async () => {
    for (const status of [410, 302]) {
      const path = newHook();
      receiver.answer(path, { status });
      const res = await wordcount(alice, { webhook: receiver.url(path) });
      const jobId = await jobIdOf(alice, res.body.id);
      const listed = await (async () => {
        for (;;) {
          const [d] = await deliveries(alice, jobId);
          if (d?.status === 'failed') return d;
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      expect(listed.attempts).toEqual([
        expect.objectContaining({ attempt: 1, outcome: 'failed', response_code: status }),
      ]);
      if (status === 302) expect(listed.attempts[0].error).toMatch(/redirects are not followed/);
      expect(await tasksOf(listed.id)).toBe(0);
      expect(receiver.to(path)).toHaveLength(1);
    }
  });

  it('hears start, throttled logs and completed when the filter asks, completed exactly once', async () => {
    const path = newHook();
    const model = await programModel(t, alice, 'lines', { command: `node "${PROGRAM}" lines 12 150 {args}` });
    const res = await t
      .http()
      .post('/api/v1/deployments')
      .set('authorization', alice)
      .send({
        name: 'chatty',
        model_id: model,
        args: {},
        webhook: receiver.url(path),
        webhook_events_filter: ['completed', 'logs', 'start', 'output'],
      });
    expect(res.status).toBe(201);
    const jobId = await jobIdOf(alice, res.body.id);
    await waitForJob(t, alice, jobId);
    const listed = await (async () => {
      for (;;) {
        const all = await deliveries(alice, jobId);
        if (all.length && all.every((d) => d.status !== 'pending')) return all;
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    expect(listed.filter((d) => d.status !== 'delivered')).toEqual([]);
    await receiver.until(() => receiver.to(path).length === listed.length);
    const secret = await secretOf(alice);
    const got = receiver.to(path).map((r: Received) => ({ ...r, json: JSON.parse(r.body) }));
    expect(got.every((r) => verifySignature(secret, r))).toBe(true);
    const events = [...listed].reverse().map((d) => d.event);
    expect(events.filter((e) => e === 'start')).toHaveLength(1);
    // It printed no JSON and wrote no files: it has no outputs to tell about.
    expect(events.filter((e) => e === 'output')).toHaveLength(0);
    expect(events.filter((e) => e === 'completed')).toHaveLength(1);
    expect(events.filter((e) => e === 'logs').length).toBeGreaterThanOrEqual(1);
    expect(events.at(-1)).toBe('completed');
    const byId = new Map(got.map((r) => [r.headers['webhook-id'], r.json]));
    const completed = byId.get(listed.find((d) => d.event === 'completed')!.id);
    expect(completed).toMatchObject({ status: 'succeeded', log_tail: expect.stringContaining('line 12') });
    // Logs messages carry the lines printed so far, and come at most every 500 ms.
    const logs = listed.filter((d) => d.event === 'logs').map((d) => byId.get(d.id));
    expect(logs.every((j) => /^line 1(\n|$)/.test(j.log_tail))).toBe(true);
    const times = (await t.runtime.orm.em
      .fork()
      .execute(
        `select created_at from webhook_deliveries where job_id = ? and event = 'logs' order by created_at`,
        [jobId],
      )) as { created_at: Date }[];
    for (let i = 1; i < times.length; i++)
      expect(
        new Date(times[i].created_at).getTime() - new Date(times[i - 1].created_at).getTime(),
      ).toBeGreaterThanOrEqual(450);
  });

  it('is signed with the new key after a rotation, and with the previous one too for a day', async () => {
    const before = await secretOf(bob);
    expect(await secretOf(bob)).toBe(before);
    const rotated = await t.http().post('/api/v1/webhooks/default/secret/rotate').set('authorization', bob);
    expect(rotated.status).toBe(200);
    expect(rotated.body.key).not.toBe(before);
    expect(await secretOf(bob)).toBe(rotated.body.key);
    const path = newHook();
    await wordcount(bob, { webhook: receiver.url(path) });
    const [message] = await receiver
      .until(() => receiver.to(path).length === 1)
      .then(() => receiver.to(path));
    expect(verifySignature(rotated.body.key, message)).toBe(true);
    expect(verifySignature(before, message)).toBe(true);
    expect(String(message.headers['webhook-signature']).split(' ')).toHaveLength(2);
  });

  it('works over GraphQL too: createDeployment takes the webhook, webhookDeliveries lists the messages', async () => {
    const path = newHook();
    const text = (await uploadFile(t, alice, Buffer.from('x\n'), 'x.txt')).body.media.id;
    const res = await t.gql(
      `mutation ($input: CreateDeploymentInput!) {
         createDeployment(input: $input) { webhook webhookEventsFilter job { id } } }`,
      {
        input: {
          name: 'g',
          modelId: BUILTIN.wordcount,
          args: { text },
          webhook: receiver.url(path),
          webhookEventsFilter: ['COMPLETED', 'OUTPUT', 'START'],
        },
      },
      alice,
    );
    expect(res.body.data.createDeployment).toMatchObject({
      webhook: receiver.url(path),
      webhookEventsFilter: ['START', 'OUTPUT', 'COMPLETED'],
    });
    const jobId = res.body.data.createDeployment.job.id;
    await receiver.until(() => receiver.to(path).length === 3);
    const list = await t.gql(
      `query ($id: ID!) { webhookDeliveries(jobId: $id) { nodes { event status attempts { outcome responseCode } } } }`,
      { id: jobId },
      alice,
    );
    expect(list.body.data.webhookDeliveries.nodes.map((n: { event: string }) => n.event).sort()).toEqual([
      'COMPLETED',
      'OUTPUT',
      'START',
    ]);
    const output = receiver.to(path).find((r) => JSON.parse(r.body).output.result !== null);
    expect(JSON.parse(output!.body)).toMatchObject({ status: 'succeeded', output: { result: { words: 1 } } });
    const secret = await t.gql('{ webhookSecret { key } }', {}, alice);
    expect(secret.body.data.webhookSecret.key).toBe(await secretOf(alice));
  });
});

describe('webhook addresses', () => {
  it.each([
    ['a loopback address not allowed', () => 'http://127.0.0.1:1/hook'],
    ['the metadata service', () => 'http://169.254.169.254/latest/meta-data'],
    ['a private network', () => 'http://10.0.0.1/hook'],
    ['IPv6 loopback', () => `http://[::1]:${receiver.port}/hook`],
    ['an IPv4-mapped loopback', () => `http://[::ffff:127.0.0.1]:${receiver.port}/hook`],
    ['another port of an allowed host', () => `http://127.0.0.1:${receiver.port + 1}/hook`],
    ['a scheme other than http(s)', () => 'ftp://example.com/hook'],
    ['credentials in the URL', () => `http://user:pw@127.0.0.1:${receiver.port}/hook`],
  ])('refuses %s with VALIDATION_FAILED, creating nothing', async (_what, url) => {
    const before = await t.http().get('/api/v1/deployments?limit=200').set('authorization', bob);
    const res = await wordcount(bob, { webhook: url() });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(res.body.error.details.webhook).toBeDefined();
    const after = await t.http().get('/api/v1/deployments?limit=200').set('authorization', bob);
    expect(after.body).toHaveLength(before.body.length);
  });

  it('refuses an unknown event, and a filter without a webhook', async () => {
    const unknown = await wordcount(bob, { webhook: receiver.url(), webhook_events_filter: ['finished'] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details.webhookEventsFilter).toMatch(/start, output, logs, completed/);
    const alone = await wordcount(bob, { webhook_events_filter: ['completed'] });
    expect(alone.status).toBe(400);
    expect(alone.body.error.details.webhookEventsFilter).toMatch(/needs a webhook/);
  });

  it('keeps each owner to their own deliveries', async () => {
    const { jobId } = await deploy(t, alice, BUILTIN.wordcount, {
      text: (await uploadFile(t, alice, Buffer.from('z\n'), 'z.txt')).body.media.id,
    });
    const foreign = await t.http().get(`/api/v1/jobs/${jobId}/webhook-deliveries`).set('authorization', bob);
    expect(foreign.status).toBe(404);
    const gql = await t.gql(
      'query ($id: ID!) { webhookDeliveries(jobId: $id) { nodes { id } } }',
      { id: jobId },
      bob,
    );
    expect(gql.body.errors[0].extensions.code).toBe('NOT_FOUND');
    expect((await t.http().get('/api/v1/webhooks/default/secret')).status).toBe(401);
  });
});
