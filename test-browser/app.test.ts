import path from 'node:path';
import sharp from 'sharp';
import { devAudience, devIssuerUrl, loadDevSigningKey, signUserToken } from '../src/auth/dev-issuer';
import { BUILTIN, deploy, waitForJob } from '../test/helpers/jobs';
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

const PROGRAM = path.resolve(__dirname, '..', 'test', 'fixtures', 'job-program.js');
/** Some Chromium versions log refused websocket reconnections; only the socket test expects them. */
const WS_NOISE = /WebSocket connection to .* failed/;

let h: Harness;
let alice: Person;
/** The operator's token (not a person in a browser): a blocker job and the long-running model. */
let operator: string;
let sleeperModel: string;
let imageName: string;

/** Runs a GraphQL operation against the service directly (not through the browser's proxy). */
async function api(auth: string, query: string, variables: Record<string, unknown> = {}) {
  const res = await h.app.gql(query, variables, auth);
  if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
  return res.body.data;
}

const cancel = (auth: string, id: string) =>
  api(auth, 'mutation ($id: ID!) { cancelJob(id: $id) { id } }', { id });

/** Occupies the only job slot (LOCAL_EXECUTOR_CONCURRENCY=1) until canceled: later jobs stay queued. */
async function block(): Promise<string> {
  const { jobId } = await deploy(h.app, operator, sleeperModel, {}, 'blocker');
  await waitForJob(h.app, operator, jobId, (j) => j.status === 'RUNNING');
  return jobId;
}

async function noErrors(person: Person, allowed?: RegExp) {
  expect(person.errors.filter((e) => !allowed?.test(e))).toEqual([]);
}

beforeAll(async () => {
  h = await startHarness({ LOCAL_EXECUTOR_CONCURRENCY: '1', SESSION_TOKEN_TTL_SECONDS: '30' });
  const key = await loadDevSigningKey(h.app.config.dataDir);
  operator = `Bearer ${await signUserToken(key, devIssuerUrl(h.url), devAudience(h.app.config), { sub: 'operator' })}`;
  const created = await api(
    operator,
    'mutation ($input: CreateModelInput!) { createModel(input: $input) { id } }',
    {
      input: {
        name: 'Sleeper',
        description: 'Waits until it is canceled.',
        container: 'local',
        command: `node "${PROGRAM}" idle {args}`,
        tags: ['test', 'long'],
        args: [],
      },
    },
  );
  sleeperModel = created.createModel.id;
}, 120000);
afterAll(() => h?.close());

describe('the web app in a browser', () => {
  it('a newcomer signs up through the built-in provider and lands in the app', async () => {
    alice = await signUp(h, 'alice');
    expect(new URL(alice.page.url()).pathname).toBe('/');
    await alice.page.getByText('No jobs yet').waitFor();
    await noErrors(alice);
  });

  it('loads under 300 KB of compressed JavaScript, hashed assets cached for a year', async () => {
    const page = await alice.context.newPage();
    const scripts: { url: string; bytes: number; encoding?: string; cache?: string }[] = [];
    page.on('response', (res) => {
      if (res.request().resourceType() !== 'script') return;
      const headers = res.headers();
      scripts.push({
        url: res.url(),
        bytes: Number(headers['content-length']),
        encoding: headers['content-encoding'],
        cache: headers['cache-control'],
      });
    });
    await page.goto('/');
    await page.getByRole('heading', { name: 'Jobs', level: 1 }).waitFor();
    expect(scripts.length).toBeGreaterThan(0);
    for (const s of scripts) {
      // Chromium asks for brotli over HTTPS only; here it gets the gzip copy.
      expect(s.cache).toBe('public, max-age=31536000, immutable');
      expect(['br', 'gzip']).toContain(s.encoding);
      expect(s.bytes).toBeGreaterThan(0);
    }
    const total = scripts.reduce((n, s) => n + s.bytes, 0);
    console.log(`first load: ${scripts.length} script(s), ${total} bytes compressed`);
    expect(total).toBeLessThan(300 * 1024);
    await page.close();
  });

  it('uploads images, picked or dropped, with progress, previews, tags, and cancel', async () => {
    const { page } = alice;
    await nav(page, 'Media').click();
    await page.getByText('No files yet').waitFor();
    imageName = 'landscape.png';
    const png = await sharp({
      create: { width: 900, height: 600, channels: 3, background: { r: 40, g: 120, b: 200 } },
    })
      .png()
      .toBuffer();
    await page
      .getByLabel('Files to upload')
      .setInputFiles({ name: imageName, mimeType: 'image/png', buffer: png });
    const row = page.getByRole('listitem', { name: `Upload of ${imageName}` });
    await row.getByText('done').waitFor();
    const progress = row.getByRole('progressbar');
    expect(
      await progress.evaluate((p: HTMLProgressElement, size) => p.value === p.max && p.max >= size, png.length),
    ).toBe(true);
    const preview = page.getByRole('img', { name: `Preview of ${imageName}` });
    await preview.waitFor();
    await eventually(async () =>
      expect(await preview.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(900),
    );

    // Dropping a file uploads it too.
    const dropped = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#c33' } })
      .png()
      .toBuffer();
    const data = await page.evaluateHandle((bytes) => {
      const dt = new DataTransfer();
      dt.items.add(new File([new Uint8Array(bytes)], 'dropped.png', { type: 'image/png' }));
      return dt;
    }, Array.from(dropped));
    await page.getByTestId('dropzone').dispatchEvent('drop', { dataTransfer: data });
    await page.getByRole('listitem', { name: 'Upload of dropped.png' }).getByText('done').waitFor();
    await page.getByRole('img', { name: 'Preview of dropped.png' }).waitFor();

    // Tags: edit, then filter by them.
    const card = page.getByRole('listitem', { name: 'dropped.png' });
    await card.getByLabel('Tags of dropped.png').fill('red, small');
    await card.getByRole('button', { name: 'Save tags' }).click();
    await eventually(async () =>
      expect(await card.getByLabel('Tags of dropped.png').inputValue()).toBe('red, small'),
    );
    await page.getByLabel('Filter by tags').fill('red');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/\/files\?tags=red$/);
    await eventually(async () =>
      expect(await page.getByRole('list', { name: 'Your media' }).getByRole('listitem').count()).toBe(1),
    );
    await screenshot(page, 'media');
    // Delete (two steps), then the filter shows nothing.
    await card.getByRole('button', { name: 'Delete' }).click();
    await card.getByRole('button', { name: 'Delete for good' }).click();
    await page.getByText('No file carries these tags.').waitFor();

    // A slow upload (throttled by the browser) can be canceled; it leaves no file behind.
    const cdp = await alice.context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: 64 * 1024,
    });
    await page.goto('/files');
    const big = Buffer.alloc(4 * 1024 * 1024, 7);
    await page
      .getByLabel('Files to upload')
      .setInputFiles({ name: 'big.bin', mimeType: 'application/octet-stream', buffer: big });
    const bigRow = page.getByRole('listitem', { name: 'Upload of big.bin' });
    await eventually(async () =>
      expect(
        await bigRow.getByRole('progressbar').evaluate((p: HTMLProgressElement) => p.value),
      ).toBeGreaterThan(0),
    );
    await bigRow.getByRole('button', { name: 'Cancel upload' }).click();
    await bigRow.getByText('canceled').waitFor();
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: -1,
    });
    await cdp.detach();
    await page.reload();
    await page.getByRole('img', { name: `Preview of ${imageName}` }).waitFor();
    expect(await page.getByRole('list', { name: 'Your media' }).getByRole('listitem').count()).toBe(1);
    await noErrors(alice);
  });

  it('runs the thumbnail model and watches queued, running and succeeded arrive without reloading', async () => {
    const blocker = await block();
    const { page } = alice;
    await nav(page, 'Run a model').click();
    await page.getByRole('listitem', { name: 'Image thumbnail' }).getByRole('link', { name: 'Run' }).click();
    await page.getByRole('heading', { name: 'Run Image thumbnail' }).waitFor();
    await page.getByLabel('image', { exact: true }).selectOption({ label: imageName });
    await page.getByLabel('width (optional)').fill('64');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page.waitForURL(/\/jobs\/[\w-]+$/);
    await page.evaluate(() => ((window as unknown as { marker: string }).marker = 'no reload'));
    const head = page.locator('.page-head .status');
    await eventually(async () => expect(await head.textContent()).toBe('queued'));
    await screenshot(page, 'job-queued');

    await cancel(operator, blocker);
    await eventually(async () => expect(await head.textContent()).toBe('succeeded'), 60000);
    const history = await page
      .getByRole('list', { name: 'State history' })
      .locator('.status')
      .allTextContents();
    expect(history).toEqual(['queued', 'starting', 'running', 'succeeded']);
    expect(await page.evaluate(() => (window as unknown as { marker?: string }).marker)).toBe('no reload');
    const thumb = page.getByRole('img', { name: /^Result / });
    await thumb.waitFor();
    await eventually(async () =>
      expect(await thumb.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(64),
    );
    await screenshot(page, 'job');
    await noErrors(alice);
  });

  it("shows the server's validation errors beside the fields they name", async () => {
    const { page } = alice;
    await page.goto(`/models/${BUILTIN.thumbnail}`);
    await page.getByLabel('width (optional)').fill('5');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const width = page.locator('.field', { has: page.locator('#arg-width') });
    await width.getByRole('alert').filter({ hasText: 'must be at least 16' }).waitFor();
    const image = page.locator('.field', { has: page.locator('#arg-image') });
    await image.getByRole('alert').filter({ hasText: 'is required' }).waitFor();
    expect(await page.locator('#arg-width').getAttribute('aria-invalid')).toBe('true');
    expect(new URL(page.url()).pathname).toBe(`/models/${BUILTIN.thumbnail}`);
    await screenshot(page, 'run-form-invalid');
    await noErrors(alice);
  });

  it('cancels a long job from its page', async () => {
    const { page } = alice;
    await page.goto('/models?tags=long');
    await page.getByRole('listitem', { name: 'Sleeper' }).getByRole('link', { name: 'Run' }).click();
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page.waitForURL(/\/jobs\/[\w-]+$/);
    const head = page.locator('.page-head .status');
    await eventually(async () => expect(await head.textContent()).toBe('running'), 60000);
    await page
      .getByLabel('Job log')
      .getByText(/idle \d+/)
      .waitFor();
    await page.getByRole('button', { name: 'Cancel job' }).click();
    await eventually(async () => expect(await head.textContent()).toBe('canceled'));
    await page.getByRole('button', { name: 'Cancel job' }).waitFor({ state: 'detached' });
    await noErrors(alice);
  });

  it('two people in two browsers see only their own jobs', async () => {
    const bob = await signUp(h, 'bob');
    await bob.page.getByText('No jobs yet').waitFor();
    const aliceJobs = await alice.page.evaluate(() => location.pathname);
    expect(aliceJobs).toMatch(/^\/jobs\//);
    // Bob opens one of Alice's jobs: it does not exist for him.
    await bob.page.goto(aliceJobs);
    await bob.page
      .getByRole('alert')
      .filter({ hasText: /not found/i })
      .waitFor();
    // A job Bob starts appears live in his list, and never in Alice's.
    await bob.page.goto('/');
    await bob.page.getByText('No jobs yet').waitFor();
    const bobAuth = `Bearer ${await tokenOf(bob)}`;
    const { jobId } = await deploy(h.app, bobAuth, sleeperModel, {}, "bob's run");
    await bob.page.locator('.job-row', { hasText: "bob's run" }).waitFor();
    await cancel(bobAuth, jobId);
    await bob.page.locator('.job-row', { hasText: "bob's run" }).getByText('canceled').waitFor();
    await alice.page.goto('/');
    await alice.page.locator('.job-row').first().waitFor();
    expect(await alice.page.locator('.job-row').allTextContents()).not.toContainEqual(
      expect.stringContaining("bob's run"),
    );
    expect(await bob.page.locator('.job-row').count()).toBe(1);
    await noErrors(alice);
    await noErrors(bob, /404|not found/i);
    await bob.context.close();
  });
});
