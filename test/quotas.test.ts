import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { User } from '../src/users/user.entity';
import { startTestApp, type TestApp } from './helpers/app';
import { PROGRAM, restApi } from './helpers/jobs';
import { until } from './helpers/media';

jest.setTimeout(180_000);

interface QueuedJob {
  status: string;
  pending_reason: string | null;
  queue_position: number | null;
}

describe('quotas (docs/governance.md)', () => {
  let t: TestApp;
  let dir: string;
  let operator: string;

  beforeAll(async () => {
    t = await startTestApp({
      LOCAL_EXECUTOR_TRUST: 'any',
      ADMIN_SUBJECTS: 'quota-operator',
      WORKER_CONCURRENCY: '4',
      QUOTA_MAX_MACHINES: 'cpu=8',
    });
    dir = await mkdtemp(path.join(os.tmpdir(), 'media-quota-'));
    operator = `Bearer ${await t.tokenFor('quota-operator')}`;
  });
  afterAll(async () => {
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function ownerWithGate(sub: string) {
    const auth = `Bearer ${await t.tokenFor(sub)}`;
    const api = restApi(t.port, auth);
    const me = await t.gql('{ me { id } }', {}, auth);
    const gate = path.join(dir, sub);
    const model = await api.call('POST', '/api/v1/models', {
      name: 'gated',
      container: 'local',
      command: `node "${PROGRAM}" await "${gate}" {args}`,
      args: {},
    });
    const run = async () => {
      const d = await api.call('POST', '/api/v1/deployments', {
        name: 'q',
        model_id: model.body.id,
        args: {},
      });
      expect(d.status).toBe(201);
      return (
        (await api.call('GET', `/api/v1/deployments/${d.body.id as string}`)).body.job as { id: string }
      ).id;
    };
    return { auth, api, id: me.body.data.me.id as string, gate, run };
  }

  it('only operators set quotas; bad input is 400, an unknown owner 404', async () => {
    const o = await ownerWithGate('quota-plain');
    const put = (auth: string, url: string, body: unknown) =>
      t
        .http()
        .put(url)
        .set('authorization', auth)
        .send(body as object);
    const own = await put(o.auth, `/api/v1/admin/quotas/user/${o.id}`, { max_running_jobs: 100 });
    expect(own.status).toBe(403);
    expect(own.body.error.code).toBe('FORBIDDEN');
    const gql = await t.gql(
      'mutation { setQuota(ownerType: "user", ownerId: "00000000-0000-4000-8000-000000000000", input: { shares: 2 }) { shares } }',
      {},
      o.auth,
    );
    expect(gql.body.errors[0].extensions.code).toBe('FORBIDDEN');

    const unknown = await put(operator, '/api/v1/admin/quotas/user/00000000-0000-4000-8000-000000000000', {});
    expect(unknown.status).toBe(404);
    const notUuid = await put(operator, '/api/v1/admin/quotas/team/nope', {});
    expect(notUuid.status).toBe(404);
    const badType = await put(operator, `/api/v1/admin/quotas/group/${o.id}`, {});
    expect(badType.status).toBe(400);
    const negative = await put(operator, `/api/v1/admin/quotas/user/${o.id}`, { max_running_jobs: -1 });
    expect(negative.status).toBe(400);
    expect(negative.body.error.details).toHaveProperty('maxRunningJobs');
    const badShares = await put(operator, `/api/v1/admin/quotas/user/${o.id}`, { shares: 0 });
    expect(badShares.status).toBe(400);
    const badMachines = await put(operator, `/api/v1/admin/quotas/user/${o.id}`, {
      machines: { cpu: 'many' },
    });
    expect(badMachines.status).toBe(400);
    // Nothing was written by the refused requests: the owner still has the defaults.
    const read = await t.http().get('/api/v1/billing/quota').set('authorization', o.auth);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({
      owner: { type: 'user', id: o.id },
      max_running_jobs: null,
      running_jobs: 0,
      machines: [{ machine_type: 'cpu', limit: 8, in_use: 0 }],
      shares: 1,
      recent_usage: 0,
    });

    const set = await put(operator, `/api/v1/admin/quotas/user/${o.id}`, {
      max_running_jobs: 3,
      machines: { 'gpu-a100': 4, cpu: null },
      shares: 2.5,
    });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({
      max_running_jobs: 3,
      machines: [
        { machine_type: 'cpu', limit: null, in_use: 0 },
        { machine_type: 'gpu-a100', limit: 4, in_use: 0 },
      ],
      shares: 2.5,
    });
    const viaGql = await t.gql(
      '{ quota { maxRunningJobs shares machines { machineType limit } } }',
      {},
      o.auth,
    );
    expect(viaGql.body.data.quota).toMatchObject({ maxRunningJobs: 3, shares: 2.5 });
  });

  it('holds a job over the running-jobs quota queued with its reason, and starts it once the first ends', async () => {
    const o = await ownerWithGate('quota-one');
    const set = await t
      .http()
      .put(`/api/v1/admin/quotas/user/${o.id}`)
      .set('authorization', operator)
      .send({ max_running_jobs: 1 });
    expect(set.status).toBe(200);

    const first = await o.run();
    await until(
      () => o.api.job(first),
      (j) => j.status === 'running',
      30_000,
    );
    const second = await o.run();
    // Free slots remain (4), but the quota holds it: it stays queued, never refused.
    await new Promise((r) => setTimeout(r, 1500));
    const waiting = (await o.api.job(second)) as unknown as QueuedJob;
    expect(waiting).toMatchObject({
      status: 'queued',
      pending_reason: 'QuotaExceeded: 1 of 1 running jobs',
      queue_position: 1,
    });
    const viaGql = await t.gql(
      'query ($id: ID!) { job(id: $id) { status pendingReason queuePosition } }',
      { id: second },
      o.auth,
    );
    expect(viaGql.body.data.job).toEqual({
      status: 'QUEUED',
      pendingReason: 'QuotaExceeded: 1 of 1 running jobs',
      queuePosition: 1,
    });
    const quota = await t.http().get('/api/v1/billing/quota').set('authorization', o.auth);
    expect(quota.body).toMatchObject({ max_running_jobs: 1, running_jobs: 1 });

    await writeFile(o.gate, '');
    const done = await until(
      () => o.api.job(second),
      (j) => j.status === 'succeeded',
      60_000,
    );
    expect(done.status).toBe('succeeded');
    expect(((await o.api.job(first)) as unknown as QueuedJob).status).toBe('succeeded');
    const after = await t.http().get('/api/v1/billing/quota').set('authorization', o.auth);
    expect(after.body.running_jobs).toBe(0);
    expect(after.body.recent_usage).toBeGreaterThan(0);
  });

  it('holds a job over a machine-type quota, and releases it when the operator raises the quota', async () => {
    const o = await ownerWithGate('quota-machines');
    await t
      .http()
      .put(`/api/v1/admin/quotas/user/${o.id}`)
      .set('authorization', operator)
      .send({ machines: { cpu: 1 } });
    const first = await o.run();
    await until(
      () => o.api.job(first),
      (j) => j.status === 'running',
      30_000,
    );
    const second = await o.run();
    await new Promise((r) => setTimeout(r, 1500));
    expect(await o.api.job(second)).toMatchObject({
      status: 'queued',
      pending_reason: 'QuotaExceeded: 1 of 1 cpu in use',
    });
    // Raised: the job starts at once, while the first still runs.
    await t
      .http()
      .put(`/api/v1/admin/quotas/user/${o.id}`)
      .set('authorization', operator)
      .send({ machines: { cpu: 2 } });
    const started = await until(
      () => o.api.job(second),
      (j) => j.status === 'running',
      30_000,
    );
    expect(started.status).toBe('running');
    expect(((await o.api.job(first)) as unknown as QueuedJob).status).toBe('running');
    await writeFile(o.gate, '');
    await until(
      () => o.api.job(second),
      (j) => j.status === 'succeeded',
      60_000,
    );
  });

  it('lets only team admins and owners ask for high priority (403 for a member)', async () => {
    const alice = `Bearer ${await t.tokenFor('quota-team-owner')}`;
    const created = await t
      .http()
      .post('/api/v1/teams')
      .set('authorization', alice)
      .send({ name: 'Quota team' });
    const key = async (role: string) =>
      `Bearer ${
        (
          await t
            .http()
            .post('/api/v1/tokens')
            .set('authorization', alice)
            .send({ name: 'k', team_id: created.body.id, role })
        ).body.token
      }`;
    const member = await key('member');
    // Alice acting for the team as its owner (the web app's session token).
    const user = await t.runtime.orm.em.fork().findOneOrFail(User, { subject: 'quota-team-owner' });
    const cookie = await t.runtime.services.sessions.open(user, null);
    const session = await t.runtime.services.login.sessionToken({ cookie, teamId: created.body.id });
    const admin = `Bearer ${session.accessToken}`;
    const model = await t
      .http()
      .post('/api/v1/models')
      .set('authorization', admin)
      .send({ name: 'q', container: 'local', command: `node "${PROGRAM}" argv {args}`, args: {} });
    const deploy = (auth: string, priority: string) =>
      t
        .http()
        .post('/api/v1/deployments')
        .set('authorization', auth)
        .send({ name: 'p', model_id: model.body.id, args: {}, priority });
    const refused = await deploy(member, 'high');
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('FORBIDDEN');
    expect((await deploy(member, 'low')).status).toBe(201);
    expect((await deploy(admin, 'high')).status).toBe(201);
    // The team's quota is read by its members too.
    const quota = await t.http().get('/api/v1/billing/quota').set('authorization', member);
    expect(quota.body.owner).toEqual({ type: 'team', id: created.body.id });
  });
});
