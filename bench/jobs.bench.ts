/**
 * `npm run bench -- jobs`:
 * 1. latency from `createDeployment` to the job's `running` and `succeeded` events on a graphql-ws
 *    subscription, for a trivial command (`true`), p50 and p99 over BENCH_JOBS jobs run one at a
 *    time, next to a bare INSERT + NOTIFY round trip on the same database, measured in the same run;
 * 2. throughput: BENCH_THROUGHPUT trivial jobs created at once, until the last one succeeded.
 */
import { Client } from 'pg';
import { jobsClient, now, percentile, printTable, setting, SMOKE, startService } from './lib';

const JOBS = setting('BENCH_JOBS', 200, 5);
const THROUGHPUT = setting('BENCH_THROUGHPUT', 1000, 10);

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
  } finally {
    await dispose();
    await sut.stop();
  }
}
