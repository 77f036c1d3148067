import sharp from 'sharp';
import { BUILTIN } from '../test/helpers/jobs';
import { eventually, nav, screenshot, signUp, startHarness, type Harness, type Person } from './helpers';

/** What a newcomer meets in the first hour: who they are, usage, the run form, a job, media, GraphiQL. */
let h: Harness;
let neo: Person;

beforeAll(async () => {
  h = await startHarness();
  neo = await signUp(h, 'neo');
}, 120000);
afterAll(() => h?.close());

describe('first impressions', () => {
  it('the header says who is signed in and for whom the page acts', async () => {
    const header = neo.page.locator('header.top');
    const user = header.locator('.whoami-user');
    await user.waitFor();
    expect(await user.textContent()).toBe('Signed in as neo');
    expect(await user.evaluate((e) => e.getBoundingClientRect().width)).toBeGreaterThan(0);
    await expect(header.getByLabel('Acting as').inputValue()).resolves.toBe('');
    expect(await header.getByLabel('Acting as').locator('option:checked').textContent()).toBe('myself');
    await screenshot(neo.page, 'first-header');
  });

  it('usage with nothing yet says so, and small amounts read as amounts', async () => {
    const { page } = neo;
    await nav(page, 'Usage').click();
    await page.getByText('Nothing to chart yet this month.').waitFor();
    expect(await page.locator('.chart svg').count()).toBe(0);
    await screenshot(page, 'first-usage-empty');
    // A small file kept for a moment: storage in a unit that shows it, a cost below a cent.
    const png = await sharp({ create: { width: 300, height: 200, channels: 3, background: '#48c' } })
      .png()
      .toBuffer();
    await nav(page, 'Media').click();
    await page
      .getByLabel('Files to upload')
      .setInputFiles({ name: 'sky.png', mimeType: 'image/png', buffer: png });
    await page.getByRole('img', { name: 'Preview of sky.png' }).waitFor();
    await new Promise((r) => setTimeout(r, 1500));
    await nav(page, 'Usage').click();
    const summary = page.getByTestId('usage-summary');
    await summary.waitFor();
    const text = (await summary.textContent()) ?? '';
    expect(text).not.toMatch(/0\.000000|GB-months/);
    expect(text).toMatch(/storage: [\d.]+ (B|KB|MB)-(seconds|minutes|hours)/);
    // Below a cent a day: the chart shows the storage itself, never an empty box.
    await page.getByRole('img', { name: 'Daily storage' }).waitFor();
    expect(
      await page
        .locator('.chart .bar-0[height]')
        .evaluateAll((r) => r.some((e) => Number(e.getAttribute('height')) > 0)),
    ).toBe(true);
    await screenshot(page, 'first-usage');
  });

  it('the run form speaks in descriptions, offers the formats as a select, and the job page reads well', async () => {
    const { page } = neo;
    await page.goto(`/models/${BUILTIN.thumbnail}`);
    await page.getByLabel('The image to scale down', { exact: true }).selectOption({ label: 'sky.png' });
    await page.getByLabel('Width of the thumbnail in pixels (optional)').fill('64');
    const format = page.getByLabel('Image format of the thumbnail (optional)');
    expect(await format.evaluate((e) => e.tagName)).toBe('SELECT');
    expect(await format.locator('option').allTextContents()).toEqual([
      'Default (png)',
      'png',
      'jpeg',
      'webp',
    ]);
    await format.selectOption('webp');
    const run = page.getByRole('button', { name: 'Run', exact: true });
    const form = await page.locator('form.run-form').boundingBox();
    const box = await run.boundingBox();
    expect(box!.width).toBeLessThan(form!.width / 2);
    await screenshot(page, 'first-run-form');
    await run.click();
    await page.waitForURL(/\/jobs\/[\w-]+$/);
    await eventually(
      async () => expect(await page.locator('.page-head .status').textContent()).toBe('succeeded'),
      60000,
    );
    const args = page.getByRole('definition').filter({ has: page.getByRole('link', { name: 'sky.png' }) });
    await args.waitFor();
    const argList = page.locator('dl[aria-label="Arguments"]');
    expect(await argList.textContent()).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-/);
    expect(await argList.textContent()).toContain('Width of the thumbnail in pixels64');
    await expect(page.locator('pre[aria-label="Result JSON"]').count()).resolves.toBe(0);
    // The run is named after the model: the name shows once.
    expect(await page.locator('main').getByText('Image thumbnail', { exact: true }).count()).toBe(1);
    await screenshot(page, 'first-job');
    await nav(page, 'Jobs').click();
    const row = page.locator('.job-row').first();
    await row.waitFor();
    expect(await row.getByText('Image thumbnail', { exact: true }).count()).toBe(1);
    // The job's machine time, a fraction of a cent, is what the usage chart shows now.
    await nav(page, 'Usage').click();
    await page.getByRole('img', { name: 'Daily machine-seconds' }).waitFor();
    await page.getByText('the chart shows the machine-seconds used instead').waitFor();
    await page
      .getByRole('row', { name: /Image thumbnail/ })
      .getByText('< 0.01')
      .waitFor();
    await screenshot(page, 'first-usage-compute');
  });

  it('media: finished upload rows go, uploads and job results apart, small previews', async () => {
    const { page } = neo;
    const previews: string[] = [];
    page.on('request', (r) => {
      if (/\/media\/[\w-]+\.\w+/.test(r.url())) previews.push(r.url());
    });
    await nav(page, 'Media').click();
    const small = await sharp({ create: { width: 800, height: 400, channels: 3, background: '#c84' } })
      .png()
      .toBuffer();
    await page
      .getByLabel('Files to upload')
      .setInputFiles({ name: 'sand.png', mimeType: 'image/png', buffer: small });
    const row = page.getByRole('listitem', { name: 'Upload of sand.png' });
    await row.getByText('done').waitFor();
    await row.waitFor({ state: 'detached', timeout: 15000 });
    const preview = page.getByRole('img', { name: 'Preview of sand.png' });
    await eventually(async () =>
      expect(await preview.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(256),
    );
    expect(previews.every((u) => new URL(u).searchParams.get('w') === '256')).toBe(true);
    const list = page.getByRole('list', { name: 'Your media' });
    await page.getByRole('button', { name: 'Job results' }).click();
    await eventually(async () =>
      expect(
        await list.getByRole('listitem').evaluateAll((li) => li.map((l) => l.getAttribute('aria-label'))),
      ).toEqual(['thumbnail.webp']),
    );
    await screenshot(page, 'first-media-results');
    await page.getByRole('button', { name: 'Uploads' }).click();
    await eventually(async () =>
      expect(
        (
          await list.getByRole('listitem').evaluateAll((li) => li.map((l) => l.getAttribute('aria-label')))
        ).sort(),
      ).toEqual(['sand.png', 'sky.png']),
    );
    await screenshot(page, 'first-media');
  });

  it('GraphiQL opened from the signed-in browser acts as its user, with a team switch', async () => {
    const { page } = neo;
    await page.goto('/account');
    await page.getByLabel('New team').fill('Crew');
    await page.getByRole('button', { name: 'Create team' }).click();
    await page.getByRole('list', { name: 'Your teams' }).getByText('Crew').waitFor();
    const unauthorized: string[] = [];
    page.on('response', (r) => {
      if (r.status() === 401) unauthorized.push(r.url());
    });
    await page.goto('/graphql');
    const bar = page.locator('#acting');
    await bar.getByText('Acting as neo /').waitFor();
    const team = bar.getByLabel('Acting as neo /');
    expect(await team.locator('option').allTextContents()).toEqual(['myself', 'team Crew']);
    await page.locator('.graphiql-query-editor .CodeMirror').first().click();
    await page.keyboard.press('Control+A');
    await page.keyboard.type('{ me { username teamId } }');
    await page.locator('.graphiql-execute-button').click();
    await page.locator('.result-window').getByText('"neo"').waitFor();
    await team.selectOption({ label: 'team Crew' });
    await page.locator('.graphiql-execute-button').click();
    await eventually(async () =>
      expect(await page.locator('.result-window').textContent()).toMatch(/"teamId": "[\w-]+"/),
    );
    expect(unauthorized).toEqual([]);
    await screenshot(page, 'first-graphiql');
  });
});
