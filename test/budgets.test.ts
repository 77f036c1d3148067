import { mkdtemp, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { SMTPServer } from 'smtp-server';
import { AuditRecord } from '../src/teams/team.entity';
import { User } from '../src/users/user.entity';
import { startTestApp, type TestApp } from './helpers/app';
import { programModel, waitForJob } from './helpers/jobs';
import { rollUp, sql } from './helpers/spend';
import { BillingService } from '../src/billing/billing.service';
import { actingAs } from '../src/common/principal';
import { verifySignature, WebhookReceiver } from './helpers/webhook-receiver';

/** Issue 31: the cost of each job and monthly budgets (docs/governance.md). */
const PRICES = `
currency: USD
per_machine_second:
  gpu: "0.5"
  cpu: "0.0001"
  default: "0.001"
storage_per_gb_month: "0.02"
`;

let t: TestApp;
let receiver: WebhookReceiver;
let smtp: SMTPServer;
const mails: { to: string; text: string }[] = [];
const bearer = (v: string) => `Bearer ${v}`;
let seq = 0;

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  smtp = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    onData(stream, session, cb) {
      let text = '';
      stream.on('data', (c: Buffer) => (text += c.toString()));
      stream.on('end', () => {
        mails.push({ to: session.envelope.rcptTo[0].address, text });
        cb();
      });
    },
  });
  await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', r));
  const dir = await mkdtemp(path.join(os.tmpdir(), 'budgets-'));
  await writeFile(path.join(dir, 'prices.yaml'), PRICES);
  t = await startTestApp({
    LOCAL_EXECUTOR_TRUST: 'any',
    PRICES_FILE: path.join(dir, 'prices.yaml'),
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOW_PRIVATE: `127.0.0.1:${receiver.port}`,
    SMTP_URL: `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`,
    MAIL_FROM: 'billing@media.test',
  });
});
afterAll(async () => {
  await t.close();
  await receiver.close();
  await new Promise<void>((r) => smtp.close(() => r()));
});

async function person(name: string) {
  const sub = `${name}-${++seq}`;
  const email = `${sub}@x.test`;
  const token = bearer(await t.tokenFor(sub, { preferred_username: sub, email, email_verified: true }));
  await t.gql('{ me { id } }', {}, token);
  const user = await t.runtime.orm.em.fork().findOneOrFail(User, { subject: sub });
  return { sub, email, token, id: user.id };
}

/** A model of 2 gpu machines with a 10 s timeout: at most 10 x 2 x 0.5 = 10.00 USD a job. */
async function gpuModel(auth: string, mode: string) {
  return programModel(t, auth, mode, { machine_type: 'gpu', machine_count: 2, timeout_seconds: 10 });
}

function deployRest(auth: string, modelId: string, args: Record<string, unknown> = {}) {
  return t
    .http()
    .post('/api/v1/deployments')
    .set('authorization', auth)
    .send({ name: 'run', model_id: modelId, args });
}

const putBudget = (auth: string, body: unknown) =>
  t
    .http()
    .put('/api/v1/billing/budget')
    .set('authorization', auth)
    .send(body as object);
const getBudget = (auth: string) => t.http().get('/api/v1/billing/budget').set('authorization', auth);

/** Exact expected cost: run seconds x 2 machines x 0.5, half up to 4 decimals. */
function expectedCost(runSeconds: number): string {
  const micros = BigInt(Math.round(runSeconds * 1e6));
  const units = (2n * micros * 5n * 10_000n * 2n + 10n * 1_000_000n) / (2n * 10n * 1_000_000n);
  return (Number(units) / 10_000).toFixed(4);
}

async function countOf(table: string, where: string, params: unknown[]): Promise<number> {
  const [row] = await t.runtime.orm.em
    .fork()
    .execute(`select count(*)::int as n from ${table} where ${where}`, params);
  return row.n as number;
}

describe('the cost of each job (local executor)', () => {
  it('is exact and final once it ended, so far while it runs, and in the jobs list', async () => {
    const alice = await person('alice');
    const quick = await gpuModel(alice.token, 'argv');
    const created = await deployRest(alice.token, quick, {});
    expect(created.status).toBe(201);
    const ended = await waitForJob(t, alice.token, created.body.job?.id ?? (await firstJob(alice.token)));
    const rest = await t.http().get(`/api/v1/jobs/${ended.id}`).set('authorization', alice.token);
    expect(rest.body.cost).toEqual({
      amount: expectedCost(rest.body.run_seconds),
      currency: 'USD',
      final: true,
    });
    expect(Number(rest.body.cost.amount)).toBeGreaterThan(0);
    const gql = await t.gql(
      'query ($id: ID!) { job(id: $id) { cost { amount currency final } } }',
      { id: ended.id },
      alice.token,
    );
    expect(gql.body.data.job.cost).toEqual(rest.body.cost);
    const list = await t.http().get('/api/v1/jobs').set('authorization', alice.token);
    expect(list.status).toBe(200);
    expect(list.body.find((j: { id: string }) => j.id === ended.id).cost).toEqual(rest.body.cost);

    // Running: the amount so far grows, not final; canceled, it is final.
    const idle = await gpuModel(alice.token, 'idle');
    const running = await deployRest(alice.token, idle);
    const id = running.body.job?.id ?? (await firstJob(alice.token));
    await waitForJob(t, alice.token, id, (j) => j.status === 'RUNNING');
    await new Promise((r) => setTimeout(r, 300));
    const soFar = (await t.http().get(`/api/v1/jobs/${id}`).set('authorization', alice.token)).body.cost;
    expect(soFar.final).toBe(false);
    expect(Number(soFar.amount)).toBeGreaterThan(0);
    await t.http().post(`/api/v1/jobs/${id}/cancel`).set('authorization', alice.token);
    await waitForJob(t, alice.token, id);
    const done = (await t.http().get(`/api/v1/jobs/${id}`).set('authorization', alice.token)).body;
    expect(done.cost).toEqual({ amount: expectedCost(done.run_seconds), currency: 'USD', final: true });
    expect(Number(done.cost.amount)).toBeGreaterThanOrEqual(Number(soFar.amount));

    // The statement that ended them put their machine-seconds in the rollup, to the microsecond.
    const [sums] = await t.runtime.orm.em.fork().execute(
      `select (select sum(machine_seconds) from spend_daily where owner_id = ?)::text as rolled,
                (select sum(machine_count * run_seconds::numeric) from jobs where owner_id = ? and started_at is not null)::text as jobs`,
      [alice.id, alice.id],
    );
    expect(Number(sums.rolled)).toBeCloseTo(Number(sums.jobs), 5);
  }, 60_000);
});

async function firstJob(auth: string): Promise<string> {
  const res = await t.http().get('/api/v1/jobs').set('authorization', auth);
  return res.body[0].id;
}

describe('budgets', () => {
  it('are set and read in the documented shapes, and bad input is 400', async () => {
    const bob = await person('bob');
    const none = await getBudget(bob.token);
    expect(none.status).toBe(200);
    expect(none.body).toMatchObject({
      monthly_limit: null,
      action: null,
      currency: 'USD',
      spent: '0.00',
      committed: '0.00',
    });
    for (const bad of [
      { monthly_limit: '-1', action: 'block' },
      { monthly_limit: '0', action: 'block' },
      { monthly_limit: '1.001', action: 'block' },
      { monthly_limit: 'ten', action: 'block' },
      { monthly_limit: '10', action: 'stop' },
      { action: 'block' },
      { monthly_limit: '10', action: 'notify', webhook: 'ftp://x' },
    ]) {
      const res = await putBudget(bob.token, bad);
      expect([res.status, res.body.error?.code]).toEqual([400, 'VALIDATION_FAILED']);
    }
    expect(await countOf('budgets', 'owner_id = ?', [bob.id])).toBe(0);
    const set = await putBudget(bob.token, { monthly_limit: '500', action: 'notify' });
    expect(set.status).toBe(200);
    const now = new Date();
    const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
    expect(set.body).toEqual({
      monthly_limit: '500.00',
      currency: 'USD',
      spent: '0.00',
      committed: '0.00',
      period_start: start.toISOString(),
      period_end: end.toISOString(),
      action: 'notify',
    });
    expect((await getBudget(bob.token)).body).toEqual(set.body);
    // Another owner's budget is not one's own; without a credential, 401.
    const other = await person('other');
    expect((await getBudget(other.token)).body.monthly_limit).toBeNull();
    expect((await t.http().get('/api/v1/billing/budget')).status).toBe(401);
    const viaGraphQL = await t.gql(
      'mutation { setBudget(input: { monthlyLimit: "7.50", action: BLOCK }) { monthlyLimit action } }',
      {},
      other.token,
    );
    expect(viaGraphQL.body.data.setBudget).toEqual({ monthlyLimit: '7.50', action: 'BLOCK' });
    expect((await getBudget(bob.token)).body.monthly_limit).toBe('500.00');
    const gql = await t.gql('{ budget { monthlyLimit action spent committed currency } }', {}, bob.token);
    expect(gql.body.data.budget).toEqual({
      monthlyLimit: '500.00',
      action: 'NOTIFY',
      spent: '0.00',
      committed: '0.00',
      currency: 'USD',
    });
  });

  it('block: refuses a deployment that could pass the limit with 402 naming the figures, creating nothing', async () => {
    const carol = await person('carol');
    const idle = await gpuModel(carol.token, 'idle');
    // One job running: it may still cost up to 10.00 (less what it has run).
    const first = await deployRest(carol.token, idle);
    expect(first.status).toBe(201);
    const firstId = await firstJob(carol.token);
    expect((await putBudget(carol.token, { monthly_limit: '15.00', action: 'block' })).status).toBe(200);
    const status = await getBudget(carol.token);
    const spent = Number(status.body.spent);
    const committed = Number(status.body.committed);
    expect(spent + committed).toBeGreaterThan(9.5);
    expect(spent + committed).toBeLessThanOrEqual(10.01);

    const deployments = await countOf('deployments', 'owner_id = ?', [carol.id]);
    const refused = await deployRest(carol.token, idle);
    expect(refused.status).toBe(402);
    expect(refused.body.error.code).toBe('BUDGET_EXCEEDED');
    expect(refused.body.error.details).toMatchObject({
      monthly_limit: '15.00',
      requested: '10.00',
      currency: 'USD',
    });
    expect(
      Number(refused.body.error.details.spent) + Number(refused.body.error.details.committed),
    ).toBeGreaterThan(9.5);
    expect(refused.body.error.message).toContain('15.00 USD');
    expect(await countOf('deployments', 'owner_id = ?', [carol.id])).toBe(deployments);
    const gql = await t.gql(
      'mutation ($input: CreateDeploymentInput!) { createDeployment(input: $input) { id } }',
      { input: { name: 'x', modelId: idle, args: {} } },
      carol.token,
    );
    expect(gql.body.errors[0].extensions.code).toBe('BUDGET_EXCEEDED');
    // A batch is checked as a whole, before anything is made.
    const batch = await t
      .http()
      .post('/api/v1/batches')
      .set('authorization', carol.token)
      .send({ name: 'b', model_id: idle, inputs: { items: [{}, {}] } });
    expect(batch.status).toBe(402);
    expect(batch.body.error.code).toBe('BUDGET_EXCEEDED');
    expect(await countOf('batches', 'owner_id = ?', [carol.id])).toBe(0);
    expect(await countOf('deployments', 'owner_id = ?', [carol.id])).toBe(deployments);

    // notify: the same deployment runs.
    expect((await putBudget(carol.token, { monthly_limit: '15.00', action: 'notify' })).status).toBe(200);
    const allowed = await deployRest(carol.token, idle);
    expect(allowed.status).toBe(201);
    // A higher limit lets it through under block too.
    expect((await putBudget(carol.token, { monthly_limit: '30.00', action: 'block' })).status).toBe(200);
    expect((await deployRest(carol.token, idle)).status).toBe(201);
    expect((await deployRest(carol.token, idle)).status).toBe(402);
    for (const j of await t.runtime.orm.em
      .fork()
      .execute(`select id from jobs where owner_id = ? and status in ('queued','starting','running')`, [
        carol.id,
      ]))
      await t.http().post(`/api/v1/jobs/${j.id}/cancel`).set('authorization', carol.token);
    await waitForJob(t, carol.token, firstId);
  }, 60_000);

  it('announce 80 % and 100 % once per period each: signed webhook, mail to the owner', async () => {
    const dave = await person('dave');
    const quick = await gpuModel(dave.token, 'argv');
    const hook = receiver.url('/dave');
    expect(
      (await putBudget(dave.token, { monthly_limit: '0.01', action: 'notify', webhook: hook })).status,
    ).toBe(200);
    const run = async () => {
      const res = await deployRest(dave.token, quick);
      expect(res.status).toBe(201);
      await waitForJob(t, dave.token, res.body.job?.id ?? (await firstJob(dave.token)));
    };
    await run();
    const messages = await receiver.until((r) => r.filter((m) => m.path === '/dave').length >= 2);
    const secret = (await t.http().get('/api/v1/webhooks/default/secret').set('authorization', dave.token))
      .body.key;
    const mine = messages.filter((m) => m.path === '/dave');
    for (const m of mine) expect(verifySignature(secret, m)).toBe(true);
    const bodies = mine.map((m) => JSON.parse(m.body)).sort((a, b) => a.threshold - b.threshold);
    expect(bodies.map((b) => [b.type, b.threshold, b.monthly_limit, b.currency])).toEqual([
      ['budget.threshold', 80, '0.01', 'USD'],
      ['budget.threshold', 100, '0.01', 'USD'],
    ]);
    expect(Number(bodies[0].spent)).toBeGreaterThanOrEqual(0.01);
    const deadline = Date.now() + 30_000;
    while (mails.filter((m) => m.to === dave.email).length < 2 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    const daveMails = mails.filter((m) => m.to === dave.email);
    expect(daveMails).toHaveLength(2);
    expect(daveMails.map((m) => m.text).join('\n')).toContain('Budget: 100% of the monthly limit reached');

    // Another job this month: no new message.
    await run();
    await new Promise((r) => setTimeout(r, 1500));
    expect(receiver.received.filter((m) => m.path === '/dave')).toHaveLength(2);
    expect(await countOf('budget_notices', 'owner_id = ?', [dave.id])).toBe(2);
  }, 60_000);

  it('for a team: owners change it, members read it; crossing a threshold leaves an audit record', async () => {
    const owner = await person('owner');
    const member = await person('member');
    const team = await t.gql('mutation { createTeam(input: { name: "budgeted" }) { id } }', {}, owner.token);
    const teamId = team.body.data.createTeam.id;
    const invite = await t.gql(
      'mutation ($teamId: ID!, $input: InviteToTeamInput!) { inviteToTeam(teamId: $teamId, input: $input) { token } }',
      { teamId, input: { username: member.sub, role: 'MEMBER' } },
      owner.token,
    );
    await t.gql(
      'mutation ($input: InviteAnswerInput!) { acceptInvite(input: $input) { member { role } } }',
      { input: { token: invite.body.data.inviteToTeam.token } },
      member.token,
    );
    const session = async (sub: string) => {
      const user = await t.runtime.orm.em.fork().findOneOrFail(User, { subject: sub });
      const cookie = await t.runtime.services.sessions.open(user, null);
      return bearer((await t.runtime.services.login.sessionToken({ cookie, teamId })).accessToken);
    };
    const ownerSession = await session(owner.sub);
    const memberSession = await session(member.sub);
    const denied = await putBudget(memberSession, { monthly_limit: '0.01', action: 'notify' });
    expect([denied.status, denied.body.error.code]).toEqual([403, 'FORBIDDEN']);
    expect((await putBudget(ownerSession, { monthly_limit: '0.01', action: 'notify' })).status).toBe(200);
    expect((await getBudget(memberSession)).body.monthly_limit).toBe('0.01');
    // The owner's own (user) budget is another owner's: untouched.
    expect((await getBudget(owner.token)).body.monthly_limit).toBeNull();

    const quick = await gpuModel(memberSession, 'argv');
    const res = await deployRest(memberSession, quick);
    expect(res.status).toBe(201);
    await waitForJob(t, memberSession, res.body.job?.id ?? (await firstJob(memberSession)));
    const audit = await t.runtime.orm.em.fork().find(AuditRecord, { teamId, action: 'budget.threshold' });
    expect(audit.map((a) => (a.details as { threshold: number }).threshold).sort()).toEqual([100, 80]);
    expect(audit.every((a) => a.actorVia === 'system')).toBe(true);
    expect(await t.runtime.orm.em.fork().count(AuditRecord, { teamId, action: 'budget.set' })).toBe(1);
    // Mail goes to the team's owners, not its members.
    const deadline = Date.now() + 30_000;
    while (mails.filter((m) => m.to === owner.email).length < 2 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expect(mails.filter((m) => m.to === owner.email)).toHaveLength(2);
    expect(mails.filter((m) => m.to === member.email)).toHaveLength(0);
  }, 60_000);
});

describe('stored files', () => {
  it("count in the month's spend, its thresholds and a block budget's refusal", async () => {
    const gina = await person('gina');
    // 2.19e16 bytes for one minute: 2.19e16 x 60 / (1e9 x 730 x 3600) = 500 GB-months x 0.02 = 10.00.
    await t.runtime.orm.em.fork().execute(
      `insert into media_storage (asset_id, owner_type, owner_id, bytes, live_from, live_until)
       values (gen_random_uuid(), 'user', ?, 21900000000000000, now() - interval '2 minutes', now() - interval '1 minute')`,
      [gina.id],
    );
    const usage = await t.http().get('/api/v1/billing/usage').set('authorization', gina.token);
    expect(usage.body.storage.amount).toBe('10.00');
    expect((await putBudget(gina.token, { monthly_limit: '15.00', action: 'block' })).status).toBe(200);
    expect((await getBudget(gina.token)).body).toMatchObject({ spent: '10.00', committed: '0.00' });
    // A job of at most 10.00 could pass 15.00 only with the files counted.
    const refused = await deployRest(gina.token, await gpuModel(gina.token, 'argv'));
    expect(refused.status).toBe(402);
    expect(refused.body.error.details).toMatchObject({
      spent: '10.00',
      committed: '0.00',
      requested: '10.00',
    });
    // A file live since the month began adds to the spend as time passes, and a job's end then
    // sees the 80 % the files alone reached: 2.19e16 bytes live for 6 more seconds is 1.00 more.
    expect((await putBudget(gina.token, { monthly_limit: '13.00', action: 'notify' })).status).toBe(200);
    await t.runtime.orm.em.fork().execute(
      `insert into media_storage (asset_id, owner_type, owner_id, bytes, live_from)
       values (gen_random_uuid(), 'user', ?, 21900000000000000, now() - interval '6 seconds')`,
      [gina.id],
    );
    expect(Number((await getBudget(gina.token)).body.spent)).toBeGreaterThanOrEqual(11);
    const cheap = await programModel(t, gina.token, 'argv', { machine_type: 'cpu', timeout_seconds: 10 });
    const run = await deployRest(gina.token, cheap);
    expect(run.status).toBe(201);
    await waitForJob(t, gina.token, run.body.job?.id ?? (await firstJob(gina.token)));
    expect(await countOf('budget_notices', 'owner_id = ? and threshold = 80', [gina.id])).toBe(1);
  }, 60_000);
});

describe('the spend rollup', () => {
  it("answers a year's usage equal to the live sum to the cent, over many jobs", async () => {
    const erin = await person('erin');
    const orm = t.runtime.orm;
    // 20,000 jobs over 2025, of 1 to 3 machines, some across midnight and a few over days;
    // inserted running, then ended by the rollup's own statement part, all at once.
    await orm.em.fork().execute(
      `insert into deployments (id, owner_type, owner_id, name, model_id, args, target_asset_id, created_at)
       values ('00000000-0000-4000-8000-000000000001', 'user', ?, 'bulk', 'ae6f879c-3158-422d-8c51-cc68c7a2bb17', '{}', gen_random_uuid(), now())`,
      [erin.id],
    );
    await orm.em.fork().execute(
      `insert into jobs (id, deployment_id, model_id, owner_type, owner_id, status, executor, argv, container,
         machine_type, machine_count, timeout_seconds, created_at, started_at, updated_at)
       select gen_random_uuid(), '00000000-0000-4000-8000-000000000001', 'ae6f879c-3158-422d-8c51-cc68c7a2bb17', 'user', ?,
         'running', 'local', '[]', 'x', (array['gpu','cpu','tpu'])[1 + i % 3], 1 + i % 3, 3600,
         s, s, now()
       from generate_series(1, 20000) i,
         lateral (select '2025-01-01'::timestamptz + (i * 1577.3456789) * interval '1 second' as s) st`,
      [erin.id],
    );
    await rollUp(
      orm,
      t.config.prices,
      sql`update jobs set status = 'succeeded', finished_at = started_at + (case when random() < 0.01 then 200000 else 1 + random() * 5000 end) * interval '1 second',
            run_seconds = null where owner_id = ${erin.id} and started_at < '2025-12-31' returning *`,
    );
    await orm.em
      .fork()
      .execute(
        `update jobs set run_seconds = extract(epoch from finished_at - started_at) where owner_id = ?`,
        [erin.id],
      );
    // Those started on the year's last day still run.
    expect(await countOf('jobs', "owner_id = ? and status = 'running'", [erin.id])).toBeGreaterThan(10);
    const principal = { type: 'user' as const, id: erin.id };
    const live = new BillingService(orm, t.config.prices, false);
    const acting = actingAs(principal);
    for (const [from, to] of [
      ['2025-01-01', '2025-12-31'],
      ['2025-03-01', '2025-03-31'],
      ['2025-06-15', '2026-01-10'],
    ]) {
      const a = await t.runtime.services.billing.usage(acting, { from, to });
      const b = await live.usage(acting, { from, to });
      const line = (r: typeof a) => r.items.map((i) => [i.machineType, i.jobs, i.micros, i.amount]);
      expect(line(a)).toEqual(line(b));
      expect(a.total).toBe(b.total);
      expect(a.items.length).toBe(3);
      const sa = await t.runtime.services.billing.series(a);
      const sb = await live.series(b);
      expect(sa.map((x) => [x.computeMicros, x.computeAmount])).toEqual(
        sb.map((x) => [x.computeMicros, x.computeAmount]),
      );
      const ma = await t.runtime.services.billing.models(a);
      const mb = await live.models(b);
      expect(ma).toEqual(mb);
    }
  }, 120_000);

  it('answers storage equal to the live sum of the ledger, as files come, grow and go', async () => {
    const fred = await person('fred');
    const em = t.runtime.orm.em.fork();
    // 5,000 spans over 2025: some open since before the year, the rest opened through it; then
    // (each statement of its own, as uploads and deletions are) some resized, some removed and
    // some ledger rows deleted outright.
    await em.execute(
      `insert into media_storage (asset_id, owner_type, owner_id, bytes, live_from)
       select gen_random_uuid(), 'user', ?, 1 + (i * 7919) % 5000000,
         '2025-01-01'::timestamptz + (i * 6307.123457 - 500000) * interval '1 second'
       from generate_series(1, 5000) i`,
      [fred.id],
    );
    await em.execute(
      `update media_storage set live_until = live_from + (i % 97) * interval '7 hours 13 minutes 0.5 seconds'
       from (select id, row_number() over (order by id) i from media_storage where owner_id = ?) r
       where r.id = media_storage.id and r.i % 3 = 0`,
      [fred.id],
    );
    await em.execute(
      `insert into media_storage (asset_id, owner_type, owner_id, bytes, live_from)
       select asset_id, owner_type, owner_id, bytes * 2, live_until from media_storage
       where owner_id = ? and live_until is not null and id % 2 = 0`,
      [fred.id],
    );
    await em.execute(`delete from media_storage where owner_id = ? and id % 11 = 0`, [fred.id]);
    expect(await countOf('storage_open', 'owner_id = ?', [fred.id])).toBeLessThan(400);
    const acting = actingAs({ type: 'user', id: fred.id });
    const live = new BillingService(t.runtime.orm, t.config.prices, false);
    for (const [from, to, granularity] of [
      ['2025-01-01', '2025-12-31', 'month'],
      ['2025-03-01', '2025-03-31', 'day'],
      ['2024-12-20', '2026-01-10', 'day'],
    ] as const) {
      const a = await t.runtime.services.billing.usage(acting, { from, to, granularity });
      const b = await live.usage(acting, { from, to, granularity });
      expect(a.storage.byteMicros).toBeGreaterThan(0n);
      expect(a.storage).toEqual(b.storage);
      const sa = await t.runtime.services.billing.series(a);
      const sb = await live.series(b);
      expect(sa.map((x) => [x.storageByteMicros, x.storageAmount])).toEqual(
        sb.map((x) => [x.storageByteMicros, x.storageAmount]),
      );
    }
  }, 120_000);
});
