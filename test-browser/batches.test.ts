import path from 'node:path';
import { pngBytes, uploadFile } from '../test/helpers/media';
import {
  eventually,
  nav,
  screenshot,
  signUp,
  startHarness,
  tokenOf,
  type Harness,
  type Person,
} from './helpers';

/** Issue 30: from the Media page, run a model over picked media, follow the batch to its end. */
const PROGRAM = path.resolve(__dirname, '..', 'test', 'fixtures', 'batch-program.js');

let h: Harness;
let alice: Person;

beforeAll(async () => {
  h = await startHarness({ LOCAL_EXECUTOR_CONCURRENCY: '2' });
}, 120000);
afterAll(() => h?.close());

it('selects media, runs a model over them, sees the batch complete, and downloads its results', async () => {
  alice = await signUp(h, 'batcher');
  const auth = `Bearer ${await tokenOf(alice)}`;
  const created = await h.app.gql(
    'mutation ($input: CreateModelInput!) { createModel(input: $input) { id } }',
    {
      input: {
        name: 'Copier',
        container: 'local',
        command: `node "${PROGRAM}" copy {args}`,
        args: [{ name: 'image', type: 'file', format: ':value' }],
      },
    },
    auth,
  );
  expect(created.body.errors).toBeUndefined();
  for (const name of ['one.png', 'two.png', 'three.png']) await uploadFile(h.app, auth, pngBytes(), name);

  const { page } = alice;
  await nav(page, 'Media').click();
  await page.getByRole('listitem', { name: 'one.png' }).waitFor();
  await page.getByRole('checkbox', { name: 'Select one.png' }).check();
  await page.getByRole('checkbox', { name: 'Select three.png' }).check();
  await page.getByRole('button', { name: 'Run a model over 2 media' }).click();
  await page.getByLabel('Model').selectOption({ label: 'Copier' });
  await page.getByRole('button', { name: 'Run over 2 media' }).click();

  // The batch page: its progress and counts follow the jobs live, to completed.
  await page.getByRole('heading', { name: 'Copier over 2 media', level: 1 }).waitFor();
  expect(new URL(page.url()).pathname).toMatch(/^\/batches\/[0-9a-f-]{36}$/);
  await eventually(
    async () => expect(await page.locator('.batch-status').getAttribute('data-status')).toBe('COMPLETED'),
    60000,
  );
  expect(await page.locator('dd[data-state="succeeded"]').textContent()).toBe('2');
  expect(await page.getByRole('progressbar').evaluate((p: HTMLProgressElement) => [p.value, p.max])).toEqual([
    2, 2,
  ]);
  await eventually(async () =>
    expect(await page.getByRole('list', { name: 'Its jobs' }).getByRole('listitem').count()).toBe(2),
  );
  // Its jobs filter by state.
  await page.getByLabel('Show').selectOption('FAILED');
  await page.getByText('No job in this state.').waitFor();

  const link = page.getByRole('link', { name: 'Download results (zip)' });
  expect(await link.getAttribute('href')).toMatch(/^\/api\/v1\/batches\/[0-9a-f-]{36}\/results$/);
  const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
  expect(download.suggestedFilename()).toMatch(/^batch-.*-results\.zip$/);
  await screenshot(page, 'batch-page');

  // The Batches list shows it.
  await nav(page, 'Batches').click();
  await page
    .getByRole('table', { name: 'Your batches' })
    .getByRole('link', { name: 'Copier over 2 media' })
    .waitFor();
  expect(alice.errors).toEqual([]);
}, 180000);
