import path from 'node:path';
import { devAudience, devIssuerUrl, loadDevSigningKey, signUserToken } from '../src/auth/dev-issuer';
import { eventually, nav, screenshot, signUp, startHarness, tokenOf, type Harness } from './helpers';

/** Issue 32 in a browser: a secret set on the Account page, a model made private, a version pinned. */
const PROGRAM = path.resolve(__dirname, '..', 'test', 'fixtures', 'job-program.js');
const VALUE = 'browser-secret-value-5e1f';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
}, 120000);
afterAll(() => h?.close());

it('sets a secret, makes a model private, compares its versions and runs a pinned one', async () => {
  const maya = await signUp(h, 'maya');
  const { page } = maya;
  const auth = `Bearer ${await tokenOf(maya)}`;
  // Her model: version 1, then version 2 with a longer timeout.
  const created = await h.app
    .http()
    .post('/api/v1/models')
    .set('authorization', auth)
    .send({
      name: 'Secret printer',
      container: 'local',
      command: `node "${PROGRAM}" secrets HF_TOKEN {args}`,
      args: {},
      secrets: ['HF_TOKEN'],
    });
  expect(created.status).toBe(201);
  const modelId = created.body.id as string;
  await h.app
    .http()
    .put(`/api/v1/models/${modelId}`)
    .set('authorization', auth)
    .send({ timeout_seconds: 120 })
    .expect(200);
  const versions = (await h.app.http().get(`/api/v1/models/${modelId}/versions`).set('authorization', auth))
    .body;
  const v1 = versions.find((v: { sequence: number }) => v.sequence === 1).id as string;

  // The secret, on the Account page: the value goes in and is never shown.
  await nav(page, 'Account').click();
  await page.getByLabel('Secret name').fill('HF_TOKEN');
  await page.getByLabel('Value', { exact: true }).fill(VALUE);
  await page.getByRole('button', { name: 'Set secret' }).click();
  await page.getByRole('status').getByText('Secret HF_TOKEN saved.').waitFor();
  await page.getByRole('cell', { name: 'HF_TOKEN', exact: true }).waitFor();
  expect(await page.getByLabel('Value', { exact: true }).inputValue()).toBe('');
  expect(await page.content()).not.toContain(VALUE);
  await screenshot(page, 'account-secrets');

  // The model's page: public, needs HF_TOKEN; made private, others get 404.
  await page.goto(`/models/${modelId}`);
  await page.getByRole('heading', { name: 'About this model' }).waitFor();
  expect(await page.getByTestId('visibility').textContent()).toBe('Public');
  expect(await page.getByTestId('model-secrets').textContent()).toContain('HF_TOKEN');
  await page.getByRole('button', { name: 'Make private' }).click();
  await eventually(async () => expect(await page.getByTestId('visibility').textContent()).toBe('Private'));
  const key = await loadDevSigningKey(h.app.config.dataDir);
  const other = `Bearer ${await signUserToken(key, devIssuerUrl(h.url), devAudience(h.app.config), { sub: 'someone-else' })}`;
  expect((await h.app.http().get(`/api/v1/models/${modelId}`).set('authorization', other)).status).toBe(404);

  // What changed between version 1 and 2: the timeout only.
  const diff = page.getByRole('table', { name: 'Changes between the versions' });
  await diff.getByRole('row', { name: /timeout/ }).waitFor();
  expect(await diff.getByRole('row').count()).toBe(2); // the header and the timeout
  await screenshot(page, 'model-product');

  // Version 1, pinned, runs: the job records it and its log shows the secret's name only.
  await page.getByLabel('Version to run').selectOption(v1);
  await page.getByRole('button', { name: 'Run' }).click();
  await page.waitForURL(/\/jobs\/[0-9a-f-]{36}$/);
  const jobId = page.url().split('/').pop()!;
  const job = await eventually(async () => {
    const res = await h.app.http().get(`/api/v1/jobs/${jobId}`).set('authorization', auth);
    expect(res.body.status).toBe('succeeded');
    return res.body;
  }, 60000);
  expect(job.model_version_id).toBe(v1);
  expect(job.log_tail).toContain('env HF_TOKEN=[secret HF_TOKEN]');
  await page.getByText('env HF_TOKEN=[secret HF_TOKEN]').first().waitFor();
  expect(await page.content()).not.toContain(VALUE);
  expect(maya.errors).toEqual([]);
});
