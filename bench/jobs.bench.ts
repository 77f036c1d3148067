/**
 * `npm run bench -- jobs`:
 * 1. latency from `createDeployment` to the job's `running` and `succeeded` events on a graphql-ws
 *    subscription, for a trivial command (`true`), p50 and p99 over BENCH_JOBS jobs run one at a
 *    time, next to a bare INSERT + NOTIFY round trip on the same database, measured in the same run;
 * 2. throughput: BENCH_THROUGHPUT trivial jobs created at once, until the last one succeeded;
 * 3. fan-out: BENCH_FANOUT subscribers of one owner (`jobs { id status }`, a socket each) on the
 *    one process, BENCH_FANOUT_JOBS jobs one at a time, from `createDeployment` to the last
 *    subscriber's `SUCCEEDED`, next to a bare `ws` server broadcasting the same message to as many
 *    sockets, in the same run.
 */
import { createClient, type Client as WsClient } from 'graphql-ws';
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import WebSocket from 'ws';
import {
  freePort,
  jobsClient,
  now,
  percentile,
  printTable,
  setting,
  SMOKE,
  startChild,
  startService,
} from './lib';

const JOBS = setting('BENCH_JOBS', 200, 5);
const THROUGHPUT = setting('BENCH_THROUGHPUT', 1000, 10);
const FANOUT = setting('BENCH_FANOUT', 2000, 50);
const FANOUT_JOBS = setting('BENCH_FANOUT_JOBS', 30, 3);

const fmt = (v: number) => v.toFixed(1);

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

/** The bare floor of a fan-out: a `ws` server sending one message to FANOUT sockets. */
async function bareBroadcasts(message: (jobId: string) => string): Promise<Round[]> {
  const server = await startChild('bench/baselines/ws-broadcast.server.js', {}, await freePort());
  const receipts = new Receipts(FANOUT);
  const sockets: WebSocket[] = [];
  try {
    await Promise.all(
      Array.from({ length: FANOUT }, async () => {
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

async function fanout(serviceUrl: string, auth: string, create: () => Promise<string>): Promise<void> {
  const receipts = new Receipts(FANOUT);
  const clients: WsClient[] = [];
  try {
    /** One subscriber on a socket of its own; one whose connection fails (a busy machine) comes again. */
    const subscriber = (): Promise<void> => {
      let connected!: () => void;
      const ready = new Promise<void>((r) => (connected = r));
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
            if (data?.jobs.status === 'SUCCEEDED') receipts.heard(data.jobs.id);
          },
          error: () => void subscriber(),
          complete: () => undefined,
        },
      );
      return ready;
    };
    // In batches, as dashboards would come: not 2,000 handshakes in the same instant.
    for (let i = 0; i < FANOUT; i += 100)
      await Promise.all(Array.from({ length: Math.min(100, FANOUT - i) }, subscriber));
    // Every subscriber hears the warm-up jobs: all are registered.
    for (let i = 0; i < 3; i++) await receipts.all(await create(), now());
    const rounds: Round[] = [];
    for (let i = 0; i < FANOUT_JOBS; i++) {
      const start = now();
      rounds.push(await receipts.all(await create(), start));
    }
    const sample = (id: string) =>
      JSON.stringify({
        id: randomUUID(),
        type: 'next',
        payload: { data: { jobs: { id, status: 'SUCCEEDED' } } },
      });
    const bare = await bareBroadcasts(sample);
    const stats = (what: string, rs: Round[]) => {
      const last = rs.map((r) => r.delays.at(-1)!);
      const spread = rs.map((r) => r.delays.at(-1)! - r.delays[0]);
      const row = {
        what,
        'to first p50 ms': fmt(
          percentile(
            rs.map((r) => r.delays[0]),
            50,
          ),
        ),
        'to last p50 ms': fmt(percentile(last, 50)),
        'to last p99 ms': fmt(percentile(last, 99)),
        'first to last p50 ms': fmt(percentile(spread, 50)),
        'messages/s (first to last, p50)': (FANOUT / (percentile(spread, 50) / 1000)).toFixed(0),
      };
      return { row, lastP99: percentile(last, 99), spread: percentile(spread, 50) };
    };
    const b = stats(`bare ws broadcast to ${FANOUT} sockets`, bare);
    const s = stats(`createDeployment -> SUCCEEDED on ${FANOUT} subscriptions`, rounds);
    printTable(`Fan-out to ${FANOUT} subscribers of one owner, ${FANOUT_JOBS} jobs one at a time`, [
      b.row,
      s.row,
    ]);
    printTable('Fan-out against the bare broadcast', [
      {
        'rate ratio (bare = 1)': (b.spread / s.spread).toFixed(2),
        'to last p99 over bare, ms': fmt(s.lastP99 - b.lastP99),
      },
    ]);
  } finally {
    await Promise.all(clients.map((c) => c.dispose()));
  }
}

export async function run(): Promise<void> {
  const sut = await startService({ ROLES: 'api,worker', LOCAL_EXECUTOR_TRUST: 'any' });
  const auth = `Bearer ${await sut.token('bench')}`;
  const { create, eventOf, latencies, dispose } = await jobsClient(sut.service.url, auth, 'true {args}');
  try {
    for (let i = 0; i < (SMOKE ? 1 : 10); i++) await eventOf(await create(), 'SUCCEEDED'); // warm-up

    const { running: toRunning, succeeded: toSucceeded } = await latencies(JOBS);
    const bare = await bareRoundTrips(sut.db.url, JOBS);
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
    await fanout(sut.service.url, auth, create);
  } finally {
    await dispose();
    await sut.stop();
  }
}
