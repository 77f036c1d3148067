import { createClient } from 'graphql-ws';
import { createHash, randomBytes } from 'node:crypto';
import { Client } from 'pg';
import WebSocket from 'ws';
import type { TestApp } from './app';
import { PROGRAM, waitForJob } from './jobs';
import { readEvents } from './sse';
import type { WebhookReceiver } from './webhook-receiver';

/**
 * A job that gets two of its owner's secrets (issue 32), run end to end on whichever executor the
 * app has: the program (test/fixtures/job-program.js `secrets`) prints its whole environment and
 * its secret files; the values must reach it and appear nowhere else. Shared by the local, Slurm
 * and Kubernetes suites.
 */
export interface SecretRun {
  jobId: string;
  /** A single-line token and a multi-line one (a PEM-like key printed across lines). */
  values: { HF_TOKEN: string; LICENCE_KEY: string };
  /** The program's result: where each secret came from, with its sha256. */
  result: Record<string, { from: string; mode?: string; sha256: string }>;
  logTail: string;
  /** Every text that left the service about the job: answers, events, webhook bodies. */
  seen: { label: string; text: string }[];
}

export const sha256 = (v: string) => createHash('sha256').update(v).digest('hex');

/** Fresh values, so that a search for them finds this run's only. */
export function secretValues(): SecretRun['values'] {
  const token = `hf_${randomBytes(12).toString('hex')}`;
  const key = [
    '-----BEGIN KEY-----',
    randomBytes(24).toString('base64'),
    randomBytes(24).toString('base64'),
    '-----END KEY-----',
  ].join('\n');
  return { HF_TOKEN: token, LICENCE_KEY: key };
}

export async function secretModel(
  t: TestApp,
  auth: string,
  command = `node "${PROGRAM}" secrets HF_TOKEN LICENCE_KEY {args}`,
  more: Record<string, unknown> = {},
): Promise<string> {
  const res = await t
    .http()
    .post('/api/v1/models')
    .set('authorization', auth)
    .send({
      name: 'secret printer',
      container: 'local',
      command,
      args: {},
      secrets: ['HF_TOKEN', 'LICENCE_KEY'],
      ...more,
    });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}

export async function setSecrets(t: TestApp, auth: string, values: Record<string, string>): Promise<void> {
  for (const [name, value] of Object.entries(values)) {
    const res = await t.http().put(`/api/v1/secrets/${name}`).set('authorization', auth).send({ value });
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  }
}

/** Runs the model once with a webhook hearing every event, reading the live events meanwhile. */
export async function runSecretJob(
  t: TestApp,
  auth: string,
  modelId: string,
  values: SecretRun['values'],
  receiver: WebhookReceiver | null,
  timeoutMs = 60_000,
): Promise<SecretRun> {
  const hook = `/secret-hook-${randomBytes(4).toString('hex')}`;
  let jobId = '';
  let opened!: () => void;
  const open = new Promise<void>((resolve) => (opened = resolve));
  // Live: every event of the owner's jobs, until this one has ended.
  const live = readEvents(`${t.url}/api/v1/jobs/events`, auth, {
    opened,
    stop: (events) =>
      events.some(
        (e) =>
          e.event === 'transition' &&
          e.data.job_id === jobId &&
          ['succeeded', 'failed'].includes(e.data.status),
      ),
  });
  await open;
  // Live over GraphQL too: every transition of the owner's jobs, with the fields that carry output.
  const ws = createClient({
    url: `ws://127.0.0.1:${t.port}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: auth },
    retryAttempts: 0,
  });
  const subscribed: unknown[] = [];
  let acknowledged!: () => void;
  const ack = new Promise<void>((resolve) => (acknowledged = resolve));
  ws.on('connected', () => acknowledged());
  const stopSubscription = ws.subscribe(
    { query: 'subscription { jobs { id status logTail result error secrets } }' },
    {
      next: (v) => subscribed.push(v),
      error: (e) => subscribed.push({ error: String(e) }),
      complete: () => undefined,
    },
  );
  await ack;
  const created = await t
    .http()
    .post('/api/v1/deployments')
    .set('authorization', auth)
    .send({
      name: 'with secrets',
      model_id: modelId,
      args: {},
      ...(receiver
        ? { webhook: receiver.url(hook), webhook_events_filter: ['start', 'output', 'logs', 'completed'] }
        : {}),
    });
  if (created.status !== 201) throw new Error(JSON.stringify(created.body));
  const deployment = await t.http().get(`/api/v1/deployments/${created.body.id}`).set('authorization', auth);
  jobId = deployment.body.job.id;
  const job = await waitForJob(t, auth, jobId, undefined, timeoutMs);
  if (job.status.toLowerCase() !== 'succeeded')
    throw new Error(`the job ${job.status}: ${job.error}\n${job.logTail}`);
  const liveEvents = await live;
  // The subscription's last message may still be on its way when the job reads as ended.
  const until = Date.now() + 15_000;
  while (!JSON.stringify(subscribed).includes('"SUCCEEDED"') && Date.now() < until)
    await new Promise((r) => setTimeout(r, 50));
  stopSubscription();
  await ws.dispose();
  // The whole history, replayed from the database.
  const replay = await readEvents(`${t.url}/api/v1/jobs/${jobId}/events`, auth);
  const rest = await t.http().get(`/api/v1/jobs/${jobId}`).set('authorization', auth);
  const gql = await t.gql(
    `query ($id: ID!) { job(id: $id) { id modelVersionId secrets logTail result error command transitions { to } } }`,
    { id: jobId },
    auth,
  );
  const seen = [
    { label: 'live events', text: JSON.stringify(liveEvents.events) },
    { label: 'GraphQL subscription', text: JSON.stringify(subscribed) },
    { label: 'replayed events', text: JSON.stringify(replay.events) },
    { label: 'REST job', text: JSON.stringify(rest.body) },
    { label: 'REST deployment', text: JSON.stringify(deployment.body) },
    { label: 'GraphQL job', text: JSON.stringify(gql.body) },
  ];
  if (receiver) {
    // The completed message is the last one sent.
    const deadline = Date.now() + 15_000;
    while (!receiver.to(hook).some((r) => JSON.parse(r.body).status === 'succeeded') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    const bodies = receiver.to(hook).map((r) => r.body);
    if (!bodies.length) throw new Error('no webhook message arrived');
    seen.push({ label: 'webhook bodies', text: bodies.join('\n') });
  }
  return { jobId, values, result: job.result as SecretRun['result'], logTail: job.logTail, seen };
}

/** Every table's rows as text (the public schema and the queue's), for a search in clear. */
export async function databaseText(databaseUrl: string): Promise<string> {
  const pg = new Client({ connectionString: databaseUrl });
  await pg.connect();
  try {
    const tables = await pg.query<{ name: string }>(
      `select format('%I.%I', table_schema, table_name) as name from information_schema.tables
       where table_schema in ('public', 'graphile_worker', 'graphile_worker_private') and table_type = 'BASE TABLE'`,
    );
    const parts: string[] = [];
    for (const { name } of tables.rows) {
      const rows = await pg.query<{ text: string | null }>(
        `select string_agg(t::text, E'\\n') as text from ${name} t`,
      );
      parts.push(`${name}: ${rows.rows[0].text ?? ''}`);
    }
    return parts.join('\n');
  } finally {
    await pg.end();
  }
}

/** The lines of a multi-line value, as a search for pieces of it. */
export const piecesOf = (value: string) =>
  value.split('\n').filter((l) => l.length >= 8 && !l.startsWith('-----'));
