import path from 'node:path';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import yauzl from 'yauzl';
import { BATCH_UPDATE_MS } from '../src/batches/batch.live';
import { startTestApp, type TestApp } from './helpers/app';
import { pngBytes, until, uploadFile } from './helpers/media';
import { readEvents } from './helpers/sse';
import { verifySignature, WebhookReceiver } from './helpers/webhook-receiver';

/** Issue 30: a batch's results zip, its live progress and its `completed` webhook (docs/batches.md). */
let t: TestApp;
let worker2: TestApp;
let receiver: WebhookReceiver;
let alice: string;
let bob: string;
let seq = 0;

const PROGRAM = path.join(__dirname, 'fixtures', 'batch-program.js');

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  const env = {
    LOCAL_EXECUTOR_TRUST: 'any',
    LOCAL_EXECUTOR_CONCURRENCY: '3',
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOW_PRIVATE: `127.0.0.1:${receiver.port}`,
    WEBHOOK_TIMEOUT_SECONDS: '2',
  };
  t = await startTestApp(env);
  // A second worker on the same database and the same media directory (local storage is one
  // store for every process, as a shared volume would be): both hear every job's end, and either
  // may run a job and keep its outputs.
  worker2 = await startTestApp(
    { ...env, ROLES: 'api,worker', DATA_DIR: t.config.dataDir },
    { databaseUrl: t.databaseUrl, issuer: t.issuer },
  );
  alice = `Bearer ${await t.tokenFor('alice')}`;
  bob = `Bearer ${await t.tokenFor('bob')}`;
}, 120_000);
afterAll(async () => {
  await worker2?.close();
  await t?.close();
  await receiver?.close();
});

const api = (auth: string) => ({
  post: (p: string, body?: unknown) =>
    t
      .http()
      .post(p)
      .set('authorization', auth)
      .send(body as object),
  get: (p: string) => t.http().get(p).set('authorization', auth),
});

async function copyModel(auth: string): Promise<string> {
  const res = await api(auth).post('/api/v1/models', {
    name: `copy ${++seq}`,
    container: 'local',
    command: `node "${PROGRAM}" copy {args}`,
    args: {
      image: { type: 'file', format: ':value' },
      code: { type: 'int', format: ':value', min: 0, max: 9, optional: true },
    },
  });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}

const upload = async (auth: string, name: string, bytes = pngBytes()) => ({
  id: (await uploadFile(t, auth, bytes, name)).body.media.id as string,
  size: bytes.length,
});

const batchUntil = (auth: string, id: string, done: (b: { status: string }) => boolean) =>
  until(async () => (await api(auth).get(`/api/v1/batches/${id}`)).body, done, 90_000);

/** Every entry of a zip: name -> content. */
async function unzip(buffer: Buffer): Promise<Map<string, Buffer>> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.fromBuffer(buffer, { lazyEntries: true }, (err, z) => (err ? reject(err) : resolve(z!))),
  );
  const found = new Map<string, Buffer>();
  await new Promise<void>((resolve, reject) => {
    zip.on('entry', (entry: yauzl.Entry) =>
      zip.openReadStream(entry, (err, stream) => {
        if (err) return reject(err);
        const chunks: Buffer[] = [];
        stream!.on('data', (c: Buffer) => chunks.push(c));
        stream!.on('end', () => {
          found.set(entry.fileName, Buffer.concat(chunks));
          zip.readEntry();
        });
      }),
    );
    zip.on('end', resolve);
    zip.on('error', reject);
    zip.readEntry();
  });
  return found;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const binary = (res: any, cb: (err: Error | null, body: Buffer) => void) => {
  const chunks: Buffer[] = [];
  res.on('data', (c: Buffer) => chunks.push(c));
  res.on('end', () => cb(null, Buffer.concat(chunks)));
};

describe('results', () => {
  it('answers one zip of every result file by item and source name, and a manifest', async () => {
    const model = await copyModel(alice);
    const a = await upload(alice, 'cat.png');
    const b = await upload(alice, 'dog.png', Buffer.concat([pngBytes(), Buffer.alloc(100, 1)]));
    const c = await upload(alice, 'owl.png');
    const created = await api(alice).post('/api/v1/batches', {
      name: 'copies',
      model_id: model,
      inputs: { items: [{ image: a.id }, { image: b.id }, { image: c.id, code: 3 }] },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    await batchUntil(alice, id, (x) => x.status === 'completed');

    const res = await api(alice).get(`/api/v1/batches/${id}/results`).buffer(true).parse(binary);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/zip');
    expect(res.headers['content-disposition']).toContain(`batch-${id}-results.zip`);
    const entries = await unzip(res.body as Buffer);
    // The failed item (exit 3) keeps no outputs, as any failed job: it is in the manifest only.
    expect([...entries.keys()].sort()).toEqual([
      '0-cat.png/result.txt',
      '1-dog.png/result.txt',
      'manifest.json',
    ]);
    expect(entries.get('0-cat.png/result.txt')!.toString()).toBe(`bytes=${a.size}\n`);
    expect(entries.get('1-dog.png/result.txt')!.toString()).toBe(`bytes=${b.size}\n`);
    const manifest = JSON.parse(entries.get('manifest.json')!.toString());
    expect(manifest.batch).toMatchObject({ id, name: 'copies', status: 'completed', total: 3 });
    expect(manifest.items.map((i: { item: number }) => i.item)).toEqual([0, 1, 2]);
    const jobs = (await api(alice).get(`/api/v1/batches/${id}/jobs`)).body as {
      id: string;
      status: string;
    }[];
    for (const item of manifest.items) expect(jobs.map((j) => j.id)).toContain(item.job_id);
    expect(manifest.items[0]).toMatchObject({
      status: 'succeeded',
      source_media_id: a.id,
      source_name: 'cat.png',
      files: ['0-cat.png/result.txt'],
      result: { size: a.size },
      error: null,
    });
    expect(manifest.items[0].result_urls).toHaveLength(1);
    // The URL serves the same bytes as the zip's file.
    const served = await t.http().get(new URL(manifest.items[0].result_urls[0]).pathname);
    expect(served.text).toBe(`bytes=${a.size}\n`);
    expect(manifest.items[2]).toMatchObject({ status: 'failed', files: [], result_urls: [] });
    expect(manifest.items[2].error).toEqual(expect.any(String));
  }, 120_000);

  it("is 404 for another owner's batch and for an unknown id", async () => {
    const model = await copyModel(alice);
    const a = await upload(alice, 'one.png');
    const created = await api(alice).post('/api/v1/batches', {
      name: 'mine',
      model_id: model,
      inputs: { arg: 'image', media_ids: [a.id] },
    });
    const id = created.body.id as string;
    const foreign = await api(bob).get(`/api/v1/batches/${id}/results`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('NOT_FOUND');
    expect((await api(alice).get('/api/v1/batches/not-a-uuid/results')).status).toBe(404);
    expect((await api(bob).get(`/api/v1/batches/${id}/events`)).status).toBe(404);
    await batchUntil(alice, id, (x) => x.status === 'completed');
  }, 120_000);
});

describe('live progress', () => {
  it('sends coalesced counts to a subscription and an event stream, and a final one at completion', async () => {
    const model = await copyModel(alice);
    const media = await Promise.all(Array.from({ length: 30 }, (_, k) => upload(alice, `p${k}.png`)));
    const created = await api(alice).post('/api/v1/batches', {
      name: 'thirty',
      model_id: model,
      inputs: { arg: 'image', media_ids: media.map((m) => m.id) },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const started = Date.now();

    const client = createClient({
      url: `${t.url.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: alice },
      retryAttempts: 0,
    });
    const updates: { at: number; status: string; counts: Record<string, number> }[] = [];
    const subscribed = new Promise<void>((resolve, reject) =>
      client.subscribe(
        {
          query: `subscription($id: ID!) { batchUpdated(id: $id) { id status total counts { queued starting running succeeded failed canceled } } }`,
          variables: { id },
        },
        {
          next: (v) => {
            if (v.errors) return reject(new Error(JSON.stringify(v.errors)));
            const b = (v.data as { batchUpdated: { status: string; counts: Record<string, number> } })
              .batchUpdated;
            updates.push({ at: Date.now(), status: b.status, counts: b.counts });
          },
          error: reject,
          complete: resolve,
        },
      ),
    );
    const sse = readEvents(`${t.url}/api/v1/batches/${id}/events`, alice);
    try {
      await subscribed;
      const elapsed = Date.now() - started;
      const stream = await sse;
      const bound = Math.ceil(elapsed / BATCH_UPDATE_MS) + 2;
      // Coalesced: far fewer updates than the 90 transitions of 30 jobs, within the window's bound.
      expect(updates.length).toBeGreaterThanOrEqual(2);
      expect(updates.length).toBeLessThanOrEqual(bound);
      // (Arrival times are not compared pairwise: a loaded machine delivers messages in bunches.)
      const last = updates.at(-1)!;
      expect(last.status).toBe('COMPLETED');
      expect(last.counts).toEqual({
        queued: 0,
        starting: 0,
        running: 0,
        succeeded: 30,
        failed: 0,
        canceled: 0,
      });
      expect(stream.status).toBe(200);
      expect(stream.type).toContain('text/event-stream');
      expect(stream.events.length).toBeGreaterThanOrEqual(2);
      expect(stream.events.length).toBeLessThanOrEqual(bound);
      expect(stream.events.slice(0, -1).every((e) => e.event === 'progress')).toBe(true);
      const final = stream.events.at(-1)! as unknown as {
        event: string;
        data: { counts: { succeeded: number }; finished_at: string | null };
      };
      expect(final.event).toBe('completed');
      expect(final.data).toMatchObject({ id, status: 'completed', total: 30 });
      expect(final.data.counts.succeeded).toBe(30);
      expect(final.data.finished_at).not.toBeNull();
    } finally {
      await client.dispose();
    }
    // The subscriptions are let go, and the process still has one listener for every batch.
    await until(
      async () => t.runtime.services.batchLive.size,
      (n) => n === 0,
      5000,
    );
  }, 180_000);

  it("refuses to subscribe to another owner's batch", async () => {
    const model = await copyModel(alice);
    const a = await upload(alice, 'x.png');
    const id = (
      await api(alice).post('/api/v1/batches', {
        name: 'x',
        model_id: model,
        inputs: { arg: 'image', media_ids: [a.id] },
      })
    ).body.id as string;
    const client = createClient({
      url: `${t.url.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: bob },
      retryAttempts: 0,
    });
    try {
      const errors = await new Promise<unknown>((resolve, reject) =>
        client.subscribe(
          { query: `subscription($id: ID!) { batchUpdated(id: $id) { id } }`, variables: { id } },
          {
            next: (v) => resolve(v.errors),
            error: (e) => resolve(e),
            complete: () => reject(new Error('no error')),
          },
        ),
      );
      expect(JSON.stringify(errors)).toContain('NOT_FOUND');
    } finally {
      await client.dispose();
    }
    await batchUntil(alice, id, (x) => x.status === 'completed');
  }, 120_000);
});

describe('webhook', () => {
  it('sends `completed` once, signed, with the summary, even with two workers and a retried attempt', async () => {
    const model = await copyModel(alice);
    const media = await Promise.all(Array.from({ length: 8 }, (_, k) => upload(alice, `w${k}.png`)));
    // The first attempt fails: the message is sent again, under the same id.
    receiver.answer('/batch', { status: 503 });
    const created = await api(alice).post('/api/v1/batches', {
      name: 'hooked',
      model_id: model,
      inputs: { arg: 'image', media_ids: media.map((m) => m.id) },
      webhook: receiver.url('/batch'),
      webhook_events_filter: ['completed'],
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    await batchUntil(alice, id, (x) => x.status === 'completed');
    const got = await receiver.until(
      (r) => r.filter((m) => m.path === '/batch' && m.answered === 200).length > 0,
      90_000,
    );
    // Both workers check again: the batch's message is never written twice.
    expect(await t.runtime.services.batchCompletion.check(id)).toBe(false);
    expect(await worker2.runtime.services.batchCompletion.check(id)).toBe(false);
    await new Promise((r) => setTimeout(r, 1500));
    const toBatch = receiver.to('/batch');
    expect(toBatch.map((m) => m.answered)).toEqual([503, 200]);
    expect(new Set(toBatch.map((m) => m.headers['webhook-id'])).size).toBe(1);
    const secret = (await t.http().get('/api/v1/webhooks/default/secret').set('authorization', alice)).body
      .key;
    expect(verifySignature(secret, toBatch[1])).toBe(true);
    expect(JSON.parse(toBatch[1].body)).toMatchObject({
      id,
      name: 'hooked',
      status: 'completed',
      total: 8,
      counts: { queued: 0, starting: 0, running: 0, succeeded: 8, failed: 0, canceled: 0 },
      started_at: expect.any(String),
      finished_at: expect.any(String),
    });
    expect(got.length).toBeGreaterThan(0);
    // The items' own deployments have no webhook: only the batch's message was sent.
    expect(receiver.received.filter((m) => m.path !== '/batch')).toEqual([]);
  }, 180_000);
});
