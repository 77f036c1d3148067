import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { startTestApp, type TestApp } from '../test/helpers/app';
import { createTestDatabase } from '../test/helpers/db';
import { TestIssuer } from '../test/helpers/oidc-issuer';
import { programModel, requireCluster, sharedDir } from './helpers';

jest.setTimeout(120_000);

/** Fields of `scontrol show job` (Account, QOS, Nice, ...). */
function scontrol(externalId: string): Record<string, string> {
  const out = execFileSync('scontrol', ['show', 'job', externalId], { encoding: 'utf8' });
  return Object.fromEntries(
    out
      .split(/\s+/)
      .filter((w) => w.includes('='))
      .map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]),
  );
}

describe('Slurm accounts and priorities (docs/governance.md)', () => {
  let issuer: TestIssuer;
  let t: TestApp;

  beforeAll(async () => {
    requireCluster();
    issuer = await TestIssuer.start();
    const databaseUrl = await createTestDatabase();
    const jobsDir = sharedDir('media-slurm-governance-');
    const env = { EXECUTOR: 'slurm', SLURM_POLL_SECONDS: '1', JOBS_DIR: jobsDir, ADMIN_SUBJECTS: 'operator' };
    // Users exist once they have been seen: a first start makes alice, then the mapping names her.
    const first = await startTestApp(env, { databaseUrl, issuer });
    const me = await first.gql('{ me { id } }', {}, `Bearer ${await issuer.token('gov-alice')}`);
    await first.close();
    const accounts = path.join(jobsDir, 'accounts.yaml');
    writeFileSync(accounts, `user:${me.body.data.me.id as string}: lab-alice\n`);
    t = await startTestApp(
      {
        ...env,
        SLURM_ACCOUNTS_FILE: accounts,
        SLURM_DEFAULT_ACCOUNT: 'shared',
        SLURM_QOS_HIGH: 'interactive',
      },
      { databaseUrl, issuer },
    );
  });
  afterAll(async () => {
    await t?.close();
    await issuer.stop();
  });

  it("submits with the owner's account and the priority's nice or QOS", async () => {
    const operator = `Bearer ${await issuer.token('operator')}`;
    const idle = await programModel(t, operator, 'idle');
    const run = async (sub: string, priority: string) => {
      const auth = `Bearer ${await issuer.token(sub)}`;
      const d = await t
        .http()
        .post('/api/v1/deployments')
        .set('authorization', auth)
        .send({ name: 'gov', model_id: idle, args: {}, priority });
      expect(d.status).toBe(201);
      const jobId = (
        (
          await t
            .http()
            .get(`/api/v1/deployments/${d.body.id as string}`)
            .set('authorization', auth)
        ).body.job as { id: string }
      ).id;
      let job: { status: string; external_id: string | null } = { status: 'queued', external_id: null };
      for (let i = 0; i < 300 && !job.external_id; i++) {
        job = (await t.http().get(`/api/v1/jobs/${jobId}`).set('authorization', auth)).body;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(job.external_id).toMatch(/^\d+$/);
      const fields = scontrol(job.external_id!);
      await t.http().post(`/api/v1/jobs/${jobId}/cancel`).set('authorization', auth);
      return fields;
    };

    // Alice is mapped to her lab's account; low priority sorts below with a nice of its own.
    const low = await run('gov-alice', 'low');
    expect(low).toMatchObject({ Account: 'lab-alice', Nice: '1000' });
    // Bob is not in the mapping: the default account. High takes SLURM_QOS_HIGH, which this
    // cluster (no slurmdbd, AccountingStorageType=accounting_storage/none) accepts but cannot
    // keep: with accounting, scontrol shows it (docs/executors.md, "Fair share on Slurm").
    const high = await run('gov-bob', 'high');
    expect(high).toMatchObject({ Account: 'shared', Nice: '0' });
    expect(['interactive', '(null)']).toContain(high.QOS);
    const normal = await run('gov-bob', 'normal');
    expect(normal).toMatchObject({ Account: 'shared', Nice: '0' });
  });
});
