import path from 'node:path';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { startTestApp, type TestApp } from './helpers/app';
import { pngBytes, uploadFile } from './helpers/media';
import { eventually } from './helpers/stub-process';
import { sample } from './helpers/metrics';

/**
 * Prometheus metrics on METRICS_PORT, scraped over real HTTP from an API process and from a
 * worker-only process beside it on the same database.
 */

const PROGRAM = path.join(__dirname, 'fixtures', 'job-program.js');
let api: TestApp;
let worker: TestApp | undefined;
let apiMetrics: string;
let alice: string;

beforeAll(async () => {
  api = await startTestApp({ ROLES: 'api', LOCAL_EXECUTOR_TRUST: 'any' });
  apiMetrics = `http://127.0.0.1:${await api.runtime.metricsServer.listen(0, '127.0.0.1')}`;
  alice = `Bearer ${await api.tokenFor('alice')}`;
});
afterAll(async () => {
  await worker?.close();
  await api?.close();
});

async function scrape(base: string): Promise<string> {
  const res = await fetch(`${base}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
}

async function createIdleJob(): Promise<string> {
  const model = await api
    .http()
    .post('/api/v1/models')
    .set('authorization', alice)
    .send({ name: 'idle', container: 'local', command: `node "${PROGRAM}" idle {args}`, args: {} });
  expect(model.status).toBe(201);
  const deployment = await api
    .http()
    .post('/api/v1/deployments')
    .set('authorization', alice)
    .send({ name: 'wait', model_id: model.body.id, args: {} });
  expect(deployment.status).toBe(201);
  const jobs = await api.http().get('/api/v1/jobs').set('authorization', alice);
  return jobs.body[0].id;
}

const jobStatus = async (id: string) =>
  (await api.http().get(`/api/v1/jobs/${id}`).set('authorization', alice)).body.status as string;

describe('METRICS_PORT', () => {
  it('answers /healthz and /readyz beside /metrics, and nothing else', async () => {
    expect(await (await fetch(`${apiMetrics}/healthz`)).json()).toEqual({ status: 'ok' });
    expect(await (await fetch(`${apiMetrics}/readyz`)).json()).toEqual({ status: 'ready' });
    expect((await fetch(`${apiMetrics}/graphql`)).status).toBe(404);
    // Not on the API's own port.
    expect((await api.http().get('/metrics')).status).toBe(404);
  });

  it('has the default process metrics and the database pool', async () => {
    const text = await scrape(apiMetrics);
    expect(sample(text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(sample(text, 'nodejs_heap_size_total_bytes')).toBeGreaterThan(0);
    expect(sample(text, 'db_pool_connections', { state: 'used' })).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'db_pool_connections', { state: 'pending' })).toBe(0);
  });
});

describe('requests', () => {
  it('times HTTP requests by route pattern and status, and GraphQL operations by name and outcome', async () => {
    await api.http().get('/api/v1/teams').set('authorization', alice).expect(200);
    await api
      .http()
      .get('/api/v1/models/00000000-0000-4000-8000-000000000000')
      .set('authorization', alice)
      .expect(404);
    await api.http().get('/no/such/path').expect(404);
    expect((await api.gql('query MyTeams { teams { nodes { id } } }', {}, alice)).status).toBe(200);
    await api.gql('query Broken { job(id: "00000000-0000-4000-8000-000000000000") { id } }', {}, alice);
    const text = await scrape(apiMetrics);
    const count = (labels: Record<string, string>) =>
      sample(text, 'http_request_duration_seconds_count', labels);
    expect(count({ method: 'GET', route: '/api/v1/teams', status: '200' })).toBe(1);
    expect(count({ method: 'GET', route: '/api/v1/models/:id', status: '404' })).toBe(1);
    // This one and the earlier GET /metrics on the API port: raw paths never become labels.
    expect(count({ method: 'GET', route: '(unmatched)', status: '404' })).toBe(2);
    expect(count({ method: 'POST', route: '/graphql', status: '200' })).toBe(2);
    const ops = (labels: Record<string, string>) =>
      sample(text, 'graphql_operation_duration_seconds_count', labels);
    expect(ops({ operation: 'MyTeams', type: 'query', outcome: 'success' })).toBe(1);
    expect(ops({ operation: 'Broken', type: 'query', outcome: 'error' })).toBe(1);
  });

  it('counts upload bytes and times uploads', async () => {
    const png = pngBytes(16, 16);
    expect((await uploadFile(api, alice, png)).status).toBe(200);
    const text = await scrape(apiMetrics);
    expect(sample(text, 'upload_bytes_total')).toBe(png.length);
    expect(sample(text, 'upload_duration_seconds_count', { outcome: 'stored' })).toBe(1);
  });

  it('counts open subscriptions until they end', async () => {
    const client = createClient({
      url: `ws://127.0.0.1:${api.port}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: alice },
      retryAttempts: 0,
    });
    let acknowledged!: () => void;
    const ready = new Promise<void>((r) => (acknowledged = r));
    client.on('connected', () => acknowledged());
    const stop = client.subscribe(
      { query: 'subscription { jobs { id } }' },
      { next: () => undefined, error: () => undefined, complete: () => undefined },
    );
    await ready;
    await eventually(async () => sample(await scrape(apiMetrics), 'graphql_subscriptions_open') === 1);
    stop();
    await eventually(async () => sample(await scrape(apiMetrics), 'graphql_subscriptions_open') === 0);
    await client.dispose();
  });
});

describe('jobs', () => {
  it('shows the queue, then the worker, its slots and the ends of jobs', async () => {
    const jobId = await createIdleJob();
    let text = await scrape(apiMetrics);
    expect(sample(text, 'jobs_created_total')).toBe(1);
    expect(sample(text, 'job_queue_depth')).toBe(1);
    expect(sample(text, 'jobs', { state: 'queued' })).toBe(1);
    expect(sample(text, 'job_queue_oldest_age_seconds')).toBeGreaterThan(0);
    // No worker in this process: no slots.
    expect(sample(text, 'executor_slots')).toBeUndefined();

    worker = await startTestApp(
      { ROLES: 'worker', LOCAL_EXECUTOR_TRUST: 'any', LOCAL_EXECUTOR_CONCURRENCY: '3' },
      { databaseUrl: api.databaseUrl, issuer: api.issuer },
    );
    const workerMetrics = `http://127.0.0.1:${await worker.runtime.metricsServer.listen(0, '127.0.0.1')}`;
    await eventually(async () => (await jobStatus(jobId)) === 'running');
    text = await scrape(workerMetrics);
    expect(sample(text, 'executor_slots', { executor: 'local' })).toBe(3);
    expect(sample(text, 'executor_slots_in_use', { executor: 'local' })).toBe(1);
    expect(sample(text, 'job_dispatch_latency_seconds_count')).toBe(1);
    expect(sample(text, 'jobs', { state: 'running' })).toBe(1);
    expect(sample(text, 'job_queue_depth')).toBe(0);
    expect(sample(text, 'job_queue_oldest_age_seconds')).toBe(0);

    // Canceled through the API process: that process counts the end.
    await api.http().post(`/api/v1/jobs/${jobId}/cancel`).set('authorization', alice).expect(200);
    text = await scrape(apiMetrics);
    expect(sample(text, 'jobs_ended_total', { state: 'canceled' })).toBe(1);
    expect(sample(text, 'job_run_duration_seconds_count', { state: 'canceled' })).toBe(1);
    expect(sample(text, 'http_request_duration_seconds_count', { route: '/api/v1/jobs/:id/cancel' })).toBe(1);
    await eventually(
      async () => sample(await scrape(workerMetrics), 'executor_slots_in_use', { executor: 'local' }) === 0,
    );
    // The worker-only process is probed like any other.
    expect((await fetch(`${workerMetrics}/readyz`)).status).toBe(200);
  });
});

describe('the event bus', () => {
  it('counts reconnections', async () => {
    const before = sample(await scrape(apiMetrics), 'event_bus_reconnects_total') ?? 0;
    await api.runtime.orm.em
      .fork()
      .getConnection()
      .execute(
        `select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query ilike 'listen%'`,
      );
    await eventually(
      async () => (sample(await scrape(apiMetrics), 'event_bus_reconnects_total') ?? 0) > before,
    );
  });
});
