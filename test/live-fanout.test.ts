import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { startTestApp, type TestApp } from './helpers/app';
import { deploy, programModel } from './helpers/jobs';
import { sample } from './helpers/metrics';

jest.setTimeout(240_000);

let t: TestApp;
let alice: string;
let bob: string;
/** An API key of alice's team: a team principal (its owner is the team, its user alice). */
let team: string;
const trivial: Record<string, string> = {};

const SEQUENCE = ['QUEUED', 'STARTING', 'RUNNING', 'SUCCEEDED'];

async function trivialModel(auth: Record<string, string>): Promise<string> {
  const res = await t
    .http()
    .post('/api/v1/models')
    .set(auth)
    .send({ name: 'trivial', container: 'local', command: 'true {args}', args: {} });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}

beforeAll(async () => {
  t = await startTestApp({ LOCAL_EXECUTOR_TRUST: 'any', LOCAL_EXECUTOR_CONCURRENCY: '2' });
  alice = `Bearer ${await t.tokenFor('alice')}`;
  bob = `Bearer ${await t.tokenFor('bob')}`;
  const created = await t.gql('mutation { createTeam(input: { name: "fan-out" }) { id } }', {}, alice);
  const key = await t.gql(
    'mutation ($t: ID) { createApiKey(input: { name: "k", teamId: $t }) { value } }',
    { t: created.body.data.createTeam.id },
    alice,
  );
  team = key.body.data.createApiKey.value;
  trivial.alice = await trivialModel({ authorization: alice });
  trivial.bob = await trivialModel({ authorization: bob });
  trivial.team = await trivialModel({ 'x-service-key': team });
});
afterAll(() => t.close());

function connect(app: TestApp, params: Record<string, string>): Client {
  return createClient({
    url: `ws://127.0.0.1:${app.port}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: params,
    retryAttempts: 0,
  });
}

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer!: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>(
      (_, reject) => (timer = setTimeout(() => reject(new Error(`never came: ${what}`)), ms)),
    ),
  ]);
}

type Update = { jobs: { id: string; status: string } };

/**
 * Collects a `jobs` subscription's values until `stop` says so; `check` asks `stop` again (for a
 * condition that changed since the last value came).
 */
function collect(client: Client, query: string, stop: (values: Update[]) => boolean) {
  const values: Update[] = [];
  let check = () => {};
  const done = new Promise<Update[]>((resolve, reject) => {
    const dispose = client.subscribe<Update>(
      { query },
      {
        next: (v) => {
          if (v.errors) return reject(new Error(JSON.stringify(v.errors)));
          values.push(v.data!);
          check();
        },
        error: reject,
        complete: () => resolve(values),
      },
    );
    check = () => {
      if (!stop(values)) return;
      dispose();
      resolve(values);
    };
  });
  return { values, done, check: () => check() };
}

async function registered(app: TestApp, count: number): Promise<void> {
  while (app.runtime.services.live.subscriberCount() < count) await new Promise((r) => setTimeout(r, 20));
}

describe('shared executions', () => {
  it('executes each event once per selection and audience; every subscriber gets exactly its own events, once and in order', async () => {
    let recording: string[] | null = null;
    const reader = await startTestApp(
      { ROLES: 'api' },
      { databaseUrl: t.databaseUrl, issuer: t.issuer, onQuery: (sql) => recording?.push(sql) },
    );
    // Two sockets per principal, so that sharing crosses sockets.
    const principals = {
      alice: { authorization: alice },
      bob: { authorization: bob },
      team: { apiKey: team },
    };
    const clients = Object.fromEntries(
      Object.entries(principals).map(([who, params]) => [
        who,
        [connect(reader, params), connect(reader, params)],
      ]),
    );
    // Both selections read the job's model once per execution (a loader of their own).
    const selections = [
      'subscription { jobs { id status model { id name } } }',
      'subscription Other { jobs { status id model { id } deployment { id } } }',
    ];
    const PER = 6;
    try {
      const jobIds: Record<string, string> = {};
      const until = (who: string) => (v: Update[]) =>
        v.some((x) => x.jobs.id === jobIds[who] && x.jobs.status === 'SUCCEEDED');
      const subscribers = (['alice', 'team', 'bob'] as const).flatMap((who) =>
        // bob has the first selection only: three audiences for it, two for the other.
        (who === 'bob' ? selections.slice(0, 1) : selections).flatMap((query) =>
          Array.from({ length: PER }, (_, i) => ({
            who,
            ...collect(clients[who][i % 2], query, until(who)),
          })),
        ),
      );
      await registered(reader, subscribers.length);
      recording = [];
      // One job of each owner, one at a time, each awaited by all its subscribers.
      for (const who of ['alice', 'team', 'bob'] as const) {
        const auth = who === 'team' ? undefined : who === 'alice' ? alice : bob;
        const res = auth
          ? await deploy(t, auth, trivial[who], {})
          : await t
              .http()
              .post('/graphql')
              .set('x-service-key', team)
              .send({
                query:
                  'mutation ($input: CreateDeploymentInput!) { createDeployment(input: $input) { job { id } } }',
                variables: { input: { name: 'team run', modelId: trivial.team, args: {} } },
              })
              .then((r) => ({ jobId: r.body.data.createDeployment.job.id as string }));
        jobIds[who] = res.jobId;
        await within(
          Promise.all(subscribers.filter((s) => s.who === who).map((s) => s.done)),
          60_000,
          `${who}'s job to succeed`,
        );
      }
      const modelReads = recording.filter((sql) => /from "models"/.test(sql)).length;
      recording = null;
      for (const s of subscribers)
        expect(s.values.map((v) => [v.jobs.id, v.jobs.status])).toEqual(
          SEQUENCE.map((st) => [jobIds[s.who], st]),
        );
      // Five (selection, audience) pairs, four events each: one execution each, however many subscribers.
      expect(modelReads).toBe(5 * SEQUENCE.length);
    } finally {
      await Promise.all(Object.values(clients).flatMap((cs) => cs.map((c) => c.dispose())));
      await reader.close();
    }
  });
});

/** Creates a trivial job of `who` (the team through its API key): its id. */
async function deployAs(who: 'alice' | 'bob' | 'team'): Promise<string> {
  if (who !== 'team') return (await deploy(t, who === 'alice' ? alice : bob, trivial[who], {})).jobId;
  const r = await t
    .http()
    .post('/graphql')
    .set('x-service-key', team)
    .send({
      query: 'mutation ($input: CreateDeploymentInput!) { createDeployment(input: $input) { job { id } } }',
      variables: { input: { name: 'team run', modelId: trivial.team, args: {} } },
    });
  if (r.body.errors) throw new Error(JSON.stringify(r.body.errors));
  return r.body.data.createDeployment.job.id;
}

describe('several events pending for a subscriber', () => {
  it('with many jobs of three owners at once, every subscriber gets exactly its own events, once and in order, executions still shared', async () => {
    let recording: string[] | null = null;
    const reader = await startTestApp(
      { ROLES: 'api' },
      { databaseUrl: t.databaseUrl, issuer: t.issuer, onQuery: (sql) => recording?.push(sql) },
    );
    const principals = {
      alice: { authorization: alice },
      bob: { authorization: bob },
      team: { apiKey: team },
    };
    const who = ['alice', 'team', 'bob'] as const;
    // Three sockets per principal; enough subscriptions that the hub hands each event out over
    // many turns, so the jobs' next events come while it does, and that an owner's round starts
    // gathered (256 listeners or more: docs/faults.md).
    const clients = Object.fromEntries(
      Object.entries(principals).map(([w, params]) => [w, [0, 1, 2].map(() => connect(reader, params))]),
    );
    const selections = [
      'subscription { jobs { id status model { id name } } }',
      'subscription Other { jobs { status id model { id } deployment { id } } }',
    ];
    const PER = 130;
    const JOBS = 4;
    try {
      const jobIds: Record<string, string[]> = { alice: [], team: [], bob: [] };
      const ended = (w: string) => (v: Update[]) =>
        jobIds[w].length === JOBS &&
        jobIds[w].every((id) => v.some((x) => x.jobs.id === id && x.jobs.status === 'SUCCEEDED'));
      const subscribers = who.flatMap((w) =>
        selections.flatMap((query) =>
          Array.from({ length: PER }, (_, i) => ({ who: w, ...collect(clients[w][i % 3], query, ended(w)) })),
        ),
      );
      await registered(reader, subscribers.length);
      recording = [];
      // All the jobs at once: their events interleave, and several wait for each subscriber.
      await Promise.all(
        who.flatMap((w) =>
          Array.from({ length: JOBS }, async () => {
            jobIds[w].push(await deployAs(w));
          }),
        ),
      );
      for (const s of subscribers) s.check();
      await within(
        Promise.all(subscribers.map((s) => s.done)),
        120_000,
        'every job to succeed on every subscription',
      );
      const modelReads = recording.filter((sql) => /from "models"/.test(sql)).length;
      recording = null;
      for (const s of subscribers) {
        const mine = new Set(jobIds[s.who]);
        // Nothing of another owner.
        expect(s.values.filter((v) => !mine.has(v.jobs.id))).toEqual([]);
        for (const id of mine)
          expect(s.values.filter((v) => v.jobs.id === id).map((v) => v.jobs.status)).toEqual(SEQUENCE);
      }
      // Six (selection, audience) pairs, each event of its owner executed once for each.
      expect(modelReads).toBe(who.length * selections.length * JOBS * SEQUENCE.length);
    } finally {
      await Promise.all(Object.values(clients).flatMap((cs) => cs.map((c) => c.dispose())));
      await reader.close();
    }
  });
});

describe('a slow consumer', () => {
  it('is closed with 4413 once its unsent bytes pass the bound, and holds nobody back', async () => {
    const app = await startTestApp(
      { LOCAL_EXECUTOR_TRUST: 'any', SUBSCRIPTION_MAX_BUFFER_BYTES: '65536' },
      { databaseUrl: t.databaseUrl, issuer: t.issuer },
    );
    const fast = connect(app, { authorization: alice });
    let slow: WebSocket | undefined;
    try {
      // A job whose log tail is long: each subscription's first value carries it (tens of KiB).
      const chatty = await programModel(t, alice, 'lines 4000 0');
      const { jobId } = await deploy(t, alice, chatty, {});
      await within(
        collect(fast, `subscription { jobs { id status } }`, (v) => v.at(-1)?.jobs.status === 'SUCCEEDED')
          .done,
        120_000,
        'the chatty job to end',
      );
      // A dashboard on another socket, listening before the slow one comes.
      let next = '';
      const following = collect(fast, `subscription { jobs { id status } }`, (v) =>
        v.some((x) => x.jobs.id === next && x.jobs.status === 'SUCCEEDED'),
      );
      await registered(app, 1);
      const socket = new WebSocket(`ws://127.0.0.1:${app.port}/graphql`, 'graphql-transport-ws');
      slow = socket;
      const messages: { type: string; id?: string }[] = [];
      socket.on('message', (data) => messages.push(JSON.parse(String(data))));
      const closed = new Promise<{ code: number; reason: string }>((resolve) =>
        socket.once('close', (code, reason) => resolve({ code, reason: String(reason) })),
      );
      await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
      socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: alice } }));
      while (!messages.some((m) => m.type === 'connection_ack')) await new Promise((r) => setTimeout(r, 10));
      // It reads nothing more, and asks for far more than the socket's buffers hold.
      socket.pause();
      const SUBSCRIPTIONS = 400;
      for (let i = 0; i < SUBSCRIPTIONS; i++)
        socket.send(
          JSON.stringify({
            id: `s${i}`,
            type: 'subscribe',
            payload: {
              query: 'subscription ($id: ID!) { jobUpdated(id: $id) { id status logTail } }',
              variables: { id: jobId },
            },
          }),
        );
      const tooSlow = async () =>
        sample(
          await app.runtime.metrics.registry.getSingleMetricAsString(
            'graphql_subscription_sockets_too_slow_total',
          ),
          'graphql_subscription_sockets_too_slow_total',
        ) ?? 0;
      await within(
        (async () => {
          while ((await tooSlow()) < 1) await new Promise((r) => setTimeout(r, 50));
        })(),
        120_000,
        'the slow socket to be closed',
      );
      // Meanwhile the other socket hears a new job whole, each state once and in order.
      next = (await deploy(t, alice, trivial.alice, {})).jobId;
      const seen = (await within(following.done, 60_000, 'the next job on the fast socket'))
        .filter((v) => v.jobs.id === next)
        .map((v) => v.jobs.status);
      expect(seen).toEqual(SEQUENCE);
      // The slow client, reading again, hears what was sent before the bound, then why it was closed.
      socket.resume();
      const { code, reason } = await within(closed, 60_000, 'the close frame');
      expect(code).toBe(4413);
      expect(reason).toMatch(/too slow/);
      const values = messages.filter((m) => m.type === 'next');
      expect(values.length).toBeGreaterThan(0);
      expect(values.length).toBeLessThan(SUBSCRIPTIONS);
      expect(await tooSlow()).toBe(1);
    } finally {
      slow?.terminate();
      await fast.dispose();
      await app.close();
    }
  });
});

describe('a slow consumer of pushed events', () => {
  it('is closed with 4413 when the events handed to its subscriptions pass the bound, and the others hear every state', async () => {
    const app = await startTestApp(
      { ROLES: 'api', SUBSCRIPTION_MAX_BUFFER_BYTES: '65536' },
      { databaseUrl: t.databaseUrl, issuer: t.issuer },
    );
    const fast = connect(app, { authorization: alice });
    let slow: WebSocket | undefined;
    try {
      const socket = new WebSocket(`ws://127.0.0.1:${app.port}/graphql`, 'graphql-transport-ws');
      slow = socket;
      const messages: { type: string; id?: string }[] = [];
      socket.on('message', (data) => messages.push(JSON.parse(String(data))));
      const closed = new Promise<{ code: number; reason: string }>((resolve) =>
        socket.once('close', (code, reason) => resolve({ code, reason: String(reason) })),
      );
      await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
      socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: alice } }));
      while (!messages.some((m) => m.type === 'connection_ack')) await new Promise((r) => setTimeout(r, 10));
      // Many `jobs` subscriptions (each event of the owner handed to every one by the hub, in
      // slices), each event carrying the log's tail; the slow client reads nothing.
      const SUBSCRIPTIONS = 400;
      for (let i = 0; i < SUBSCRIPTIONS; i++)
        socket.send(
          JSON.stringify({
            id: `s${i}`,
            type: 'subscribe',
            payload: { query: 'subscription { jobs { id status logTail } }' },
          }),
        );
      await registered(app, SUBSCRIPTIONS);
      socket.pause();
      const JOBS = 3;
      const jobs: string[] = [];
      // The ids are known only once every deploy has answered; until then the first job's events
      // may already come, and an empty list would stop the collection at once.
      const following = collect(
        fast,
        `subscription { jobs { id status } }`,
        (v) =>
          jobs.length === JOBS &&
          jobs.every((id) => v.some((x) => x.jobs.id === id && x.jobs.status === 'SUCCEEDED')),
      );
      await registered(app, SUBSCRIPTIONS + 1);
      // Jobs whose log tail is long, run at once (the worker of `t`): their events come while
      // the hub hands the earlier ones out.
      const chatty = await programModel(t, alice, 'lines 4000 0');
      jobs.push(
        ...(await Promise.all(
          Array.from({ length: JOBS }, async () => (await deploy(t, alice, chatty, {})).jobId),
        )),
      );
      following.check();
      const seen = await within(following.done, 120_000, 'the chatty jobs on the fast socket');
      for (const id of jobs)
        expect(seen.filter((v) => v.jobs.id === id).map((v) => v.jobs.status)).toEqual(SEQUENCE);
      const tooSlow = async () =>
        sample(
          await app.runtime.metrics.registry.getSingleMetricAsString(
            'graphql_subscription_sockets_too_slow_total',
          ),
          'graphql_subscription_sockets_too_slow_total',
        ) ?? 0;
      expect(await tooSlow()).toBe(1);
      socket.resume();
      const { code, reason } = await within(closed, 60_000, 'the close frame');
      expect(code).toBe(4413);
      expect(reason).toMatch(/too slow/);
      // What was sent before the bound came, each subscription's in order; not all of it.
      const values = messages.filter((m) => m.type === 'next') as unknown as {
        id: string;
        payload: { data: { jobs: { id: string; status: string } } };
      }[];
      expect(values.length).toBeGreaterThan(0);
      expect(values.length).toBeLessThan(SUBSCRIPTIONS * jobs.length * SEQUENCE.length);
      const bySubscription = new Map<string, string[]>();
      for (const v of values) {
        const key = `${v.id} ${v.payload.data.jobs.id}`;
        bySubscription.set(key, [...(bySubscription.get(key) ?? []), v.payload.data.jobs.status]);
      }
      for (const states of bySubscription.values()) expect(SEQUENCE.slice(0, states.length)).toEqual(states);
    } finally {
      slow?.terminate();
      await fast.dispose();
      await app.close();
    }
  });
});
