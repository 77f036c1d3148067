/**
 * `npm run bench -- jobs`:
 * 1. latency from `createDeployment` to the job's `running` and `succeeded` events on a graphql-ws
 *    subscription, for a trivial command (`true`), p50 and p99 over BENCH_JOBS jobs run one at a
 *    time, next to a bare INSERT + NOTIFY round trip on the same database, measured in the same run;
 * 2. throughput: BENCH_THROUGHPUT trivial jobs created at once, until the last one succeeded;
 * 3. fan-out: BENCH_FANOUT and BENCH_FANOUT_LARGE subscribers of one owner (`jobs { id status }`,
 *    a socket each) on the one process: the RSS they add while idle; BENCH_FANOUT_JOBS jobs one at
 *    a time, from `createDeployment` to the last subscriber's `SUCCEEDED`, and each job's own queue
 *    and run time beside those of jobs with no subscriber; every subscriber's events checked (lost,
 *    repeated, out of order); next to a bare `ws` server broadcasting the same message to as many
 *    sockets, in the same run.
 * 4. fair share: BENCH_FAIR_QUEUED jobs of owner A queued (two slots, A's jobs sleeping 0.3 s), then
 *    owner B's single job: when B's job is claimed and runs, beside when A's next job is claimed
 *    after B's creation (B's must be the next claim: one dispatch round).
 */
import { createClient, type Client as WsClient } from 'graphql-ws';
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import WebSocket from 'ws';
import {
  freePort,
  jobsClient,
  load,
  now,
  percentile,
  printTable,
  rssOf,
  setting,
  SMOKE,
  startChild,
  startService,
} from './lib';

const JOBS = setting('BENCH_JOBS', 200, 5);
const THROUGHPUT = setting('BENCH_THROUGHPUT', 1000, 10);
const FANOUT = setting('BENCH_FANOUT', 2000, 50);
const FANOUT_LARGE = setting('BENCH_FANOUT_LARGE', 10_000, 100);
const FANOUT_JOBS = setting('BENCH_FANOUT_JOBS', 30, 3);

const FAIR_QUEUED = setting('BENCH_FAIR_QUEUED', 10_000, 200);
/** BENCH_ONLY: a regular expression of the parts to run (`latency`, `throughput`, `fanout`, `fairshare`). */
const only = (part: string) => new RegExp(process.env.BENCH_ONLY ?? '.').test(part);

const fmt = (v: number) => v.toFixed(1);

/**
 * Owner A's BENCH_FAIR_QUEUED jobs queued behind two busy slots, then owner B's one job: B's is
 * claimed at the next free slot, A's next one after it (claim times from the database's clock).
 */
export async function fairShare(): Promise<void> {
  const sut = await startService({
    ROLES: 'api,worker',
    LOCAL_EXECUTOR_TRUST: 'any',
    WORKER_CONCURRENCY: '2',
  });
  const db = new Client({ connectionString: sut.db.url });
  await db.connect();
  const a = await jobsClient(sut.service.url, `Bearer ${await sut.token('owner-a')}`, 'sleep 0.3 {args}');
  const b = await jobsClient(sut.service.url, `Bearer ${await sut.token('owner-b')}`, 'true {args}');
  try {
    // A's queue: one job made through the API, copied as queued jobs with a dispatch task each
    // (as creating them one by one would leave them, in far less time).
    const template = await a.create();
    await db.query(
      `with made as (
         insert into jobs (id, deployment_id, model_id, owner_type, owner_id, status, executor, argv, inputs, container,
                           machine_type, machine_count, priority_rank, timeout_seconds, max_retries, log_tail,
                           created_at, updated_at)
         select gen_random_uuid(), deployment_id, model_id, owner_type, owner_id, 'queued', executor, argv, inputs,
                container, machine_type, machine_count, priority_rank, timeout_seconds, max_retries, '',
                now() + n * interval '1 microsecond', now()
         from jobs, generate_series(1, $2::int) n where id = $1 returning id)
       select count(graphile_worker.add_job('dispatch_job', '{}'::json, max_attempts => 5)) from made`,
      [template, FAIR_QUEUED],
    );
    await new Promise((r) => setTimeout(r, 1000)); // both slots busy with A's jobs
    const bJob = await b.create();
    await b.eventOf(bJob, 'RUNNING');
    // A's next claim comes at the next slot after B's: wait for it (one A job, 0.3 s, at most).
    type Claims = { b_claim: number; a_next: number | null; a_queued: string };
    let r: Claims = { b_claim: 0, a_next: null, a_queued: '' };
    for (let i = 0; i < 50 && r.a_next === null; i++) {
      if (i) await new Promise((done) => setTimeout(done, 100));
      [r] = (
        await db.query<Claims>(
          `select extract(epoch from bj.claimed_at - bj.created_at) * 1000 as b_claim,
                  (select extract(epoch from min(j.claimed_at) - bj.created_at) * 1000 from jobs j
                    where j.owner_id <> bj.owner_id and j.claimed_at > bj.created_at) as a_next,
                  (select count(*) from jobs j where j.owner_id <> bj.owner_id and j.status = 'queued') as a_queued
           from jobs bj where bj.id = $1`,
          [bJob],
        )
      ).rows;
    }
    printTable(
      `Fair share: owner B's one job behind ${FAIR_QUEUED} queued jobs of owner A (2 slots, A's jobs 0.3 s)`,
      [
        {
          'B claimed, ms after its creation': fmt(Number(r.b_claim)),
          "A's next claim, ms after B's creation": r.a_next === null ? 'none yet' : fmt(Number(r.a_next)),
          'B first': r.a_next === null || Number(r.b_claim) <= Number(r.a_next) ? 'yes' : 'NO',
          "A's jobs still queued": r.a_queued,
        },
      ],
    );
  } finally {
    await a.dispose();
    await b.dispose();
    await db.end();
    await sut.stop();
  }
}

/** The bare floor: a row inserted and NOTIFYed by one connection, heard by another. */
async function bareRoundTrips(databaseUrl: string, n: number): Promise<number[]> {
  const listener = new Client({ connectionString: databaseUrl });
  const writer = new Client({ connectionString: databaseUrl });
  await Promise.all([listener.connect(), writer.connect()]);
  try {
    await writer.query(
      'create table if not exists bench_events (id serial primary key, at timestamptz default now())',
    );
    await listener.query('listen bench_events');
    const times: number[] = [];
    for (let i = 0; i < n; i++) {
      const heard = new Promise<void>((resolve) => listener.once('notification', () => resolve()));
      const start = now();
      await writer.query(
        `with row as (insert into bench_events default values returning id) select pg_notify('bench_events', id::text) from row`,
      );
      await heard;
      times.push(now() - start);
    }
    return times;
  } finally {
    await Promise.all([listener.end(), writer.end()]);
  }
}

/** Per round: each receiver's delay from the round's start, once all `n` heard it. */
interface Round {
  /** ms from the round's start to each receipt, in order of arrival. */
  delays: number[];
}

/** Waits for `n` receipts of `key`, fed by `heard(key)`, and answers their delays from `start`. */
class Receipts {
  private readonly times = new Map<string, number[]>();
  private readonly waiters = new Map<string, () => void>();
  constructor(private readonly n: number) {}

  heard(key: string): void {
    const t = now();
    const list = this.times.get(key) ?? [];
    list.push(t);
    this.times.set(key, list);
    if (list.length === this.n) this.waiters.get(key)?.();
  }

  async all(key: string, start: number): Promise<Round> {
    if ((this.times.get(key)?.length ?? 0) < this.n)
      await new Promise<void>((resolve) => this.waiters.set(key, resolve));
    const delays = this.times.get(key)!.map((t) => t - start);
    this.times.delete(key);
    this.waiters.delete(key);
    return { delays };
  }
}

/** The bare floor of a fan-out: a `ws` server sending one message to `n` sockets. */
async function bareBroadcasts(n: number, message: (jobId: string) => string): Promise<Round[]> {
  const server = await startChild('bench/baselines/ws-broadcast.server.js', {}, await freePort());
  const receipts = new Receipts(n);
  const sockets: WebSocket[] = [];
  try {
    for (let i = 0; i < n; i += 100)
      await Promise.all(
        Array.from({ length: Math.min(100, n - i) }, async () => {
          const socket = new WebSocket(server.url.replace('http', 'ws'));
          socket.on('message', (data) => receipts.heard((JSON.parse(String(data)) as { key: string }).key));
          sockets.push(socket);
          await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
        }),
      );
    const rounds: Round[] = [];
    for (let i = 0; i < FANOUT_JOBS + 3; i++) {
      const key = randomUUID();
      const body = JSON.stringify({ key, ...JSON.parse(message(key)) });
      const start = now();
      await fetch(`${server.url}/broadcast`, { method: 'POST', body });
      const round = await receipts.all(key, start);
      if (i >= 3) rounds.push(round); // the first ones warm up
    }
    return rounds;
  } finally {
    for (const socket of sockets) socket.terminate();
    await server.stop();
  }
}

const SEQUENCE = ['QUEUED', 'STARTING', 'RUNNING', 'SUCCEEDED'];

/** What a job's own record says of it: seconds queued (created to started) and run. */
interface OwnTimes {
  queueSeconds: number;
  runSeconds: number;
}

interface Jobs {
  create(): Promise<string>;
  times(id: string): Promise<OwnTimes>;
  eventOf(id: string, status: string): Promise<void>;
}

function stats(rs: Round[]) {
  const p50 = (v: number[]) => percentile(v, 50);
  const last = rs.map((r) => r.delays.at(-1)!);
  return {
    first: p50(rs.map((r) => r.delays[0])),
    last: p50(last),
    lastP99: percentile(last, 99),
    spread: p50(rs.map((r) => r.delays.at(-1)! - r.delays[0])),
  };
}

/**
 * `n` subscribers of one owner (`jobs { id status }`, a socket each) on the one process: the RSS
 * they add while idle, then FANOUT_JOBS jobs one at a time, from `createDeployment` to the last
 * subscriber's `SUCCEEDED`, each job's own times, and every subscriber's events checked (each
 * state of each job once, in order).
 */
async function fanout(n: number, serviceUrl: string, auth: string, servicePid: number, jobs: Jobs) {
  const receipts = new Receipts(n);
  const clients: WsClient[] = [];
  /** Per subscriber: the states heard per job. */
  const heard: Map<string, string[]>[] = [];
  let reconnects = 0;
  const rssBefore = rssOf(servicePid);
  const rounds: Round[] = [];
  const own: OwnTimes[] = [];
  const measured: string[] = [];
  try {
    /** One subscriber on a socket of its own; one whose connection fails (a busy machine) comes again. */
    const subscriber = (): Promise<void> => {
      let connected!: () => void;
      const ready = new Promise<void>((r) => (connected = r));
      const mine = new Map<string, string[]>();
      heard.push(mine);
      const client = createClient({
        url: `${serviceUrl.replace('http', 'ws')}/graphql`,
        webSocketImpl: WebSocket,
        connectionParams: { authorization: auth },
        retryAttempts: 0,
        on: { connected },
      });
      clients.push(client);
      client.subscribe<{ jobs: { id: string; status: string } }>(
        { query: 'subscription { jobs { id status } }' },
        {
          next: ({ data }) => {
            const { id, status } = data!.jobs;
            mine.set(id, [...(mine.get(id) ?? []), status]);
            if (status === 'SUCCEEDED') receipts.heard(id);
          },
          error: () => {
            reconnects++;
            void subscriber();
          },
          complete: () => undefined,
        },
      );
      return ready;
    };
    // In batches, as dashboards would come: not thousands of handshakes in the same instant.
    for (let i = 0; i < n; i += 100)
      await Promise.all(Array.from({ length: Math.min(100, n - i) }, subscriber));
    await new Promise((r) => setTimeout(r, 2000));
    const rssIdle = rssOf(servicePid);
    // Every subscriber hears the warm-up jobs: all are registered.
    for (let i = 0; i < 3; i++) await receipts.all(await jobs.create(), now());
    for (let i = 0; i < FANOUT_JOBS; i++) {
      const start = now();
      const id = await jobs.create();
      rounds.push(await receipts.all(id, start));
      measured.push(id);
      own.push(await jobs.times(id));
    }
    await new Promise((r) => setTimeout(r, 500));
    let lost = 0;
    let repeated = 0;
    let disordered = 0;
    for (const mine of heard)
      for (const id of measured) {
        const states = mine.get(id) ?? [];
        repeated += states.length - new Set(states).size;
        lost += SEQUENCE.filter((s) => !states.includes(s)).length;
        if (states.length === SEQUENCE.length && states.join() !== SEQUENCE.join()) disordered++;
      }
    // A subscriber that reconnected counts once more in `heard` (and misses what came meanwhile).
    return {
      rssPerSubscription: (rssIdle - rssBefore) / n,
      rounds,
      own,
      lost,
      repeated,
      disordered,
      reconnects,
    };
  } finally {
    await Promise.all(clients.map((c) => c.dispose()));
  }
}

/** FANOUT_JOBS trivial jobs one at a time with no subscriber but the client's own: their own times. */
async function quietTimes(jobs: Jobs) {
  const own: OwnTimes[] = [];
  const toSucceeded: number[] = [];
  for (let i = 0; i < FANOUT_JOBS; i++) {
    const start = now();
    const id = await jobs.create();
    await jobs.eventOf(id, 'SUCCEEDED');
    toSucceeded.push(now() - start);
    own.push(await jobs.times(id));
  }
  return { own, toSucceeded: percentile(toSucceeded, 50) };
}

/** The fan-out at FANOUT and FANOUT_LARGE subscribers, each beside a bare broadcast to as many sockets. */
async function fanouts(serviceUrl: string, auth: string, servicePid: number, jobs: Jobs): Promise<void> {
  const sample = (id: string) =>
    JSON.stringify({
      id: randomUUID(),
      type: 'next',
      payload: { data: { jobs: { id, status: 'SUCCEEDED' } } },
    });
  const ms = (seconds: number) => fmt(seconds * 1000);
  const p50 = (own: OwnTimes[], key: keyof OwnTimes) =>
    percentile(
      own.map((o) => o[key]),
      50,
    );
  const quiet = await quietTimes(jobs);
  const own: Record<string, string | number>[] = [
    {
      subscribers: 0,
      'queue p50 ms': ms(p50(quiet.own, 'queueSeconds')),
      'run p50 ms': ms(p50(quiet.own, 'runSeconds')),
      'queue over none, ms': '-',
    },
  ];
  const fan: Record<string, string | number>[] = [];
  for (const n of [...new Set([FANOUT, FANOUT_LARGE])]) {
    const f = await fanout(n, serviceUrl, auth, servicePid, jobs);
    const bare = stats(await bareBroadcasts(n, sample));
    const s = stats(f.rounds);
    own.push({
      subscribers: n,
      'queue p50 ms': ms(p50(f.own, 'queueSeconds')),
      'run p50 ms': ms(p50(f.own, 'runSeconds')),
      'queue over none, ms': ms(p50(f.own, 'queueSeconds') - p50(quiet.own, 'queueSeconds')),
    });
    fan.push({
      subscribers: n,
      'bare: first / last p50 ms': `${fmt(bare.first)} / ${fmt(bare.last)}`,
      'service: first / last p50 ms (last p99)': `${fmt(s.first)} / ${fmt(s.last)} (${fmt(s.lastP99)})`,
      'first to last p50 ms (bare; service)': `${fmt(bare.spread)}; ${fmt(s.spread)}`,
      // The target: the service's last, less a job's request-to-SUCCEEDED with no subscriber, over the bare last.
      '(last - quiet job) / bare last': ((s.last - quiet.toSucceeded) / bare.last).toFixed(2),
      'idle RSS per subscription KiB': (f.rssPerSubscription / 1024).toFixed(1),
      'lost / repeated / out of order / reconnects': `${f.lost} / ${f.repeated} / ${f.disordered} / ${f.reconnects}`,
    });
  }
  printTable(
    `A trivial job's own times with subscribers of its owner (${FANOUT_JOBS} jobs one at a time; quiet request to SUCCEEDED p50 ${fmt(quiet.toSucceeded)} ms)`,
    own,
  );
  printTable(`Fan-out beside a bare ws broadcast of the same payload (load ${load().toFixed(1)})`, fan);
}

export async function run(): Promise<void> {
  const sut = await startService({ ROLES: 'api,worker', LOCAL_EXECUTOR_TRUST: 'any' });
  const auth = `Bearer ${await sut.token('bench')}`;
  const { gql, create, eventOf, latencies, dispose } = await jobsClient(sut.service.url, auth, 'true {args}');
  try {
    for (let i = 0; i < (SMOKE ? 1 : 10); i++) await eventOf(await create(), 'SUCCEEDED'); // warm-up

    if (only('latency')) await latency(sut.db.url, latencies);
    if (only('throughput')) await throughput(create, eventOf);
    const times = async (id: string): Promise<OwnTimes> =>
      (
        (await gql('query ($id: ID!) { job(id: $id) { queueSeconds runSeconds } }', { id })) as unknown as {
          job: OwnTimes;
        }
      ).job;
    if (only('fanout'))
      await fanouts(sut.service.url, auth, sut.service.process.pid!, { create, times, eventOf });
  } finally {
    await dispose();
    await sut.stop();
  }
  if (only('fairshare')) await fairShare();
}

async function latency(
  databaseUrl: string,
  latencies: (n: number) => Promise<{ running: number[]; succeeded: number[] }>,
): Promise<void> {
  const { running: toRunning, succeeded: toSucceeded } = await latencies(JOBS);
  const bare = await bareRoundTrips(databaseUrl, JOBS);
  const row = (what: string, v: number[]) => ({
    what,
    'p50 ms': fmt(percentile(v, 50)),
    'p99 ms': fmt(percentile(v, 99)),
    'p50 over bare, ms': fmt(percentile(v, 50) - percentile(bare, 50)),
  });
  printTable(`Latency over ${JOBS} trivial jobs, one at a time`, [
    row('bare INSERT + NOTIFY round trip', bare),
    row('createDeployment -> RUNNING event', toRunning),
    row('createDeployment -> SUCCEEDED event', toSucceeded),
  ]);
}

async function throughput(
  create: () => Promise<string>,
  eventOf: (id: string, status: string) => Promise<void>,
): Promise<void> {
  const start = now();
  // Created by 50 concurrent requests: a thousand connections at once overflowed the listen
  // backlog of a loaded machine (connection resets), which is not what this measures.
  const ids: string[] = [];
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (ids.length < THROUGHPUT) {
        ids.push('');
        const i = ids.length - 1;
        ids[i] = await create();
      }
    }),
  );
  await Promise.all(ids.map((id) => eventOf(id, 'SUCCEEDED')));
  const seconds = (now() - start) / 1000;
  printTable(`Throughput of ${THROUGHPUT} trivial jobs created by 50 concurrent requests`, [
    { jobs: THROUGHPUT, seconds: seconds.toFixed(1), 'jobs/s': (THROUGHPUT / seconds).toFixed(0) },
  ]);
}
