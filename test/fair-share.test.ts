import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startTestApp, type TestApp } from './helpers/app';
import { createTestDatabase } from './helpers/db';
import { TestIssuer } from './helpers/oidc-issuer';
import { PROGRAM, restApi } from './helpers/jobs';
import { until } from './helpers/media';
import { spawnService, type Spawned } from './helpers/process';

jest.setTimeout(300_000);

/** Jobs' claim times and states, read from the database (as the workers wrote them). */
async function claims(t: TestApp, ids: readonly string[]) {
  const rows: { id: string; status: string; claimed_at: Date | null; starts: string }[] =
    await t.runtime.orm.em
      .fork()
      .execute<{ id: string; status: string; claimed_at: string | null; starts: string }[]>(
        `select j.id, j.status, j.claimed_at,
              (select count(*) from job_transitions t where t.job_id = j.id and t.to_status = 'starting') as starts
       from jobs j where j.id = any(?::uuid[])`,
        [`{${ids.join(',')}}`],
      )
      .then((rs) =>
        rs.map((r) => ({ ...r, claimed_at: r.claimed_at === null ? null : new Date(r.claimed_at) })),
      );
  return rows;
}

describe('fair share across owners (local executor, two worker processes)', () => {
  let issuer: TestIssuer;
  let apiOnly: TestApp;
  let dataDir: string;
  const workers: Spawned[] = [];

  beforeAll(async () => {
    issuer = await TestIssuer.start();
    const databaseUrl = await createTestDatabase();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'media-fair-'));
    await chmod(dataDir, 0o755);
    // Jobs are created where no worker runs, so every one goes through the queue's claim.
    apiOnly = await startTestApp({ ROLES: 'api', LOCAL_EXECUTOR_TRUST: 'any' }, { databaseUrl, issuer });
    const env = {
      DATABASE_URL: databaseUrl,
      OIDC_ISSUER: issuer.issuer,
      DATA_DIR: dataDir,
      LOCAL_EXECUTOR_TRUST: 'any',
      ROLES: 'api,worker',
      WORKER_CONCURRENCY: '1',
    };
    workers.push(...(await Promise.all([spawnService(env), spawnService(env)])));
  });
  afterAll(async () => {
    for (const w of workers)
      if (w.child.exitCode === null) {
        w.child.kill('SIGTERM');
        await w.exited;
      }
    await apiOnly?.close();
    await issuer.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("starts B's one job at the next free slot while A has 200 queued; no job is taken twice", async () => {
    const a = restApi(apiOnly.port, `Bearer ${await issuer.token('owner-a')}`);
    const b = restApi(apiOnly.port, `Bearer ${await issuer.token('owner-b')}`);
    // A's jobs wait for a gate: the two slots stay held by A's first two until it opens.
    const gate = path.join(dataDir, 'gate');
    const model = async (api: typeof a, command: string) =>
      (await api.call('POST', '/api/v1/models', { name: 'm', container: 'local', command, args: {} })).body
        .id as string;
    const [modelA, modelB] = await Promise.all([
      model(a, `node "${PROGRAM}" await "${gate}" {args}`),
      model(b, `node "${PROGRAM}" argv {args}`),
    ]);
    const deploy = async (api: typeof a, modelId: string) => {
      const res = await api.call('POST', '/api/v1/deployments', { name: 'run', model_id: modelId, args: {} });
      expect(res.status).toBe(201);
      return res.body.id as string;
    };
    const jobOf = async (api: typeof a, deploymentId: string) =>
      (
        (await api.call('GET', `/api/v1/deployments/${deploymentId}`)).body.job as {
          id: string;
          queue_position: number | null;
          status: string;
        }
      ).id;

    const aDeployments: string[] = [];
    for (let i = 0; i < 200; i += 20)
      aDeployments.push(...(await Promise.all(Array.from({ length: 20 }, () => deploy(a, modelA)))));
    const aJobs = await Promise.all(aDeployments.map((d) => jobOf(a, d)));
    const bJob = await jobOf(b, await deploy(b, modelB));

    // Two of A's run (one per worker), 198 wait: A's last is 198th in A's queue, B's the first in B's.
    await until(
      () => claims(apiOnly, aJobs),
      (rows) => rows.filter((r) => r.status === 'running').length === 2,
      60_000,
    );
    const [{ id: newestA }]: { id: string }[] = await apiOnly.runtime.orm.em
      .fork()
      .execute('select id from jobs where id = any(?::uuid[]) order by created_at desc, id desc limit 1', [
        `{${aJobs.join(',')}}`,
      ]);
    const aLast = (await a.job(newestA)) as unknown as { status: string; queue_position: number | null };
    expect(aLast).toMatchObject({ status: 'queued', queue_position: 198 });
    const bQueued = (await b.job(bJob)) as unknown as { status: string; queue_position: number | null };
    expect(bQueued).toMatchObject({ status: 'queued', queue_position: 1 });
    const gateOpened = Date.now();
    await writeFile(gate, '');

    const bDone = await until(
      () => b.job(bJob),
      (j) => j.status === 'succeeded',
      120_000,
    );
    expect(bDone.status).toBe('succeeded');

    const [bRow] = await claims(apiOnly, [bJob]);
    const bCreated = (
      await apiOnly.runtime.orm.em
        .fork()
        .execute<{ created_at: string }[]>('select created_at from jobs where id = ?', [bJob])
    ).map((r) => ({ created_at: new Date(r.created_at) }));
    const aRows = await claims(apiOnly, aJobs);
    const claimedBetween = aRows.filter(
      (r) => r.claimed_at && r.claimed_at > bCreated[0].created_at && r.claimed_at < bRow.claimed_at!,
    );
    const aAfterB = aRows.filter((r) => !r.claimed_at || r.claimed_at > bRow.claimed_at!);
    console.log(
      `fair share: B claimed ${bRow.claimed_at!.getTime() - gateOpened} ms after the slots came free; ` +
        `A jobs claimed in between: ${claimedBetween.length}; A jobs still to claim then: ${aAfterB.length}`,
    );
    // The two slots came free together when the gate opened: one took B's job, the other may
    // have taken A's next; no other of A's went first.
    expect(claimedBetween.length).toBeLessThanOrEqual(1);
    expect(aAfterB.length).toBeGreaterThanOrEqual(197);

    // Some more of A's run; then no job has been claimed twice (one `starting` each at most).
    await until(
      () => claims(apiOnly, aJobs),
      (rows) => rows.filter((r) => r.status === 'succeeded').length >= aRows.length - aAfterB.length + 20,
      120_000,
    );
    const after = await claims(apiOnly, [...aJobs, bJob]);
    expect(after.filter((r) => Number(r.starts) > 1)).toEqual([]);
    expect(after.filter((r) => r.status === 'failed')).toEqual([]);
  });
});

describe('priority within one owner', () => {
  let t: TestApp;
  let dir: string;

  beforeAll(async () => {
    t = await startTestApp({ LOCAL_EXECUTOR_TRUST: 'any', WORKER_CONCURRENCY: '1' });
    dir = await mkdtemp(path.join(os.tmpdir(), 'media-priority-'));
  });
  afterAll(async () => {
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('runs higher priority first, then older first; queue positions say so', async () => {
    const owner = `Bearer ${await t.tokenFor('prio-owner')}`;
    const api = restApi(t.port, owner);
    const gate = path.join(dir, 'open');
    const mk = async (command: string) =>
      (await api.call('POST', '/api/v1/models', { name: 'm', container: 'local', command, args: {} })).body
        .id as string;
    const blocker = await mk(`node "${PROGRAM}" await "${gate}" {args}`);
    const quick = await mk(`node "${PROGRAM}" argv {args}`);
    const run = async (modelId: string, priority?: string) => {
      const res = await api.call('POST', '/api/v1/deployments', {
        name: priority ?? 'default',
        model_id: modelId,
        args: {},
        ...(priority ? { priority } : {}),
      });
      expect(res.status).toBe(201);
      const d = await api.call('GET', `/api/v1/deployments/${res.body.id as string}`);
      expect(d.body.priority).toBe(priority ?? 'normal');
      return (d.body.job as { id: string }).id;
    };
    // The one slot is held by the blocker: the rest queue.
    const held = await run(blocker);
    await until(
      () => api.job(held),
      (j) => j.status === 'running',
      30_000,
    );
    const low = await run(quick, 'low');
    const normal1 = await run(quick);
    const high = await run(quick, 'high');
    const normal2 = await run(quick, 'normal');

    const positions = await Promise.all([low, normal1, high, normal2].map((id) => api.job(id)));
    expect(positions.map((j) => (j as unknown as { queue_position: number }).queue_position)).toEqual([
      4, 2, 1, 3,
    ]);
    expect(positions.map((j) => (j as unknown as { priority: string }).priority)).toEqual([
      'low',
      'normal',
      'high',
      'normal',
    ]);
    // The list shows the same positions, in one statement for the page.
    const list = await t.gql('{ jobs(first: 10) { nodes { id queuePosition priority } } }', {}, owner);
    const listed = new Map(
      (list.body.data.jobs.nodes as { id: string; queuePosition: number | null }[]).map((n) => [
        n.id,
        n.queuePosition,
      ]),
    );
    expect([low, normal1, high, normal2].map((id) => listed.get(id))).toEqual([4, 2, 1, 3]);

    // A bad priority is refused, naming the field.
    const bad = await api.call('POST', '/api/v1/deployments', {
      name: 'x',
      model_id: quick,
      args: {},
      priority: 'urgent',
    });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('priority');

    await writeFile(gate, '');
    await until(
      () => api.job(low),
      (j) => j.status === 'succeeded',
      60_000,
    );
    const rows = await claims(t, [high, normal1, normal2, low]);
    const order = [...rows]
      .sort((x, y) => x.claimed_at!.getTime() - y.claimed_at!.getTime())
      .map((r) => r.id);
    expect(order).toEqual([high, normal1, normal2, low]);
  });
});
