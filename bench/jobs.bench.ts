/**
 * `npm run bench -- jobs`:
 * 1. latency from `createDeployment` to the job's `running` and `succeeded` events on a graphql-ws
 *    subscription, for a trivial command (`true`), p50 and p99 over BENCH_JOBS jobs run one at a
 *    time, next to a bare INSERT + NOTIFY round trip on the same database, measured in the same run;
 * 2. throughput: BENCH_THROUGHPUT trivial jobs created at once, until the last one succeeded.
 */
import { createClient } from 'graphql-ws';
import { Client } from 'pg';
import WebSocket from 'ws';
import { percentile, printTable, setting, SMOKE, startService } from './lib';

const JOBS = setting('BENCH_JOBS', 200, 5);
const THROUGHPUT = setting('BENCH_THROUGHPUT', 1000, 10);

const ms = (ns: bigint) => Number(ns) / 1e6;
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
      const start = process.hrtime.bigint();
      await writer.query(
        `with row as (insert into bench_events default values returning id) select pg_notify('bench_events', id::text) from row`,
      );
      await heard;
      times.push(ms(process.hrtime.bigint() - start));
    }
    return times;
  } finally {
    await Promise.all([listener.end(), writer.end()]);
  }
}

export async function run(): Promise<void> {
  const sut = await startService({ ROLES: 'api,worker', LOCAL_EXECUTOR_TRUST: 'any' });
  const auth = `Bearer ${await sut.token('bench')}`;
  const gql = async (query: string, variables: Record<string, unknown> = {}) => {
    const res = await fetch(`${sut.service.url}/graphql`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as {
      data?: Record<string, { id: string; job?: { id: string } }>;
      errors?: unknown;
    };
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data!;
  };
  const { createModel } = await gql(
    'mutation { createModel(input: { name: "trivial", container: "local", command: "true {args}", args: [] }) { id } }',
  );
  const create = async () =>
    (
      await gql(
        'mutation ($m: ID!) { createDeployment(input: { name: "b", modelId: $m, args: {} }) { job { id } } }',
        {
          m: createModel.id,
        },
      )
    ).createDeployment.job!.id;

  // Events per job id, with the time each arrived.
  const arrivals = new Map<string, Map<string, bigint>>();
  const waiters = new Map<string, () => void>();
  const client = createClient({
    url: `${sut.service.url.replace('http', 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: auth },
  });
  try {
    await new Promise<void>((ready, reject) => {
      client.subscribe<{ jobs: { id: string; status: string } }>(
        { query: 'subscription { jobs { id status } }' },
        {
          next: ({ data }) => {
            const { id, status } = data!.jobs;
            const seen = arrivals.get(id) ?? new Map<string, bigint>();
            seen.set(status, process.hrtime.bigint());
            arrivals.set(id, seen);
            waiters.get(`${id}:${status}`)?.();
          },
          error: reject,
          complete: () => undefined,
        },
      );
      setTimeout(ready, 300);
    });
    const eventOf = (id: string, status: string) =>
      arrivals.get(id)?.has(status)
        ? Promise.resolve()
        : new Promise<void>((resolve) => waiters.set(`${id}:${status}`, resolve));

    for (let i = 0; i < (SMOKE ? 1 : 10); i++) await eventOf(await create(), 'SUCCEEDED'); // warm-up

    const toRunning: number[] = [];
    const toSucceeded: number[] = [];
    for (let i = 0; i < JOBS; i++) {
      const start = process.hrtime.bigint();
      const id = await create();
      await eventOf(id, 'SUCCEEDED');
      const seen = arrivals.get(id)!;
      toRunning.push(ms(seen.get('RUNNING')! - start));
      toSucceeded.push(ms(seen.get('SUCCEEDED')! - start));
    }
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

    const start = process.hrtime.bigint();
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
    const seconds = ms(process.hrtime.bigint() - start) / 1000;
    printTable(`Throughput of ${THROUGHPUT} trivial jobs created by 50 concurrent requests`, [
      { jobs: THROUGHPUT, seconds: seconds.toFixed(1), 'jobs/s': (THROUGHPUT / seconds).toFixed(0) },
    ]);
  } finally {
    await client.dispose();
    await sut.stop();
  }
}
