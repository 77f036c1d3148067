import path from 'node:path';
import { devAudience, devIssuerUrl, loadDevSigningKey, signUserToken } from '../src/auth/dev-issuer';
import { deploy } from '../test/helpers/jobs';
import {
  eventually,
  nav,
  PASSWORD,
  screenshot,
  signUp,
  startHarness,
  tokenOf,
  watchErrors,
  type Harness,
} from './helpers';

/** Issue 29 in a browser: an owner invites, a newcomer signs up through the link, works, is removed. */
const PROGRAM = path.resolve(__dirname, '..', 'test', 'fixtures', 'job-program.js');

let h: Harness;
let model: string;
beforeAll(async () => {
  h = await startHarness();
  const key = await loadDevSigningKey(h.app.config.dataDir);
  const operator = `Bearer ${await signUserToken(key, devIssuerUrl(h.url), devAudience(h.app.config), { sub: 'operator' })}`;
  const res = await h.app.gql(
    'mutation ($input: CreateModelInput!) { createModel(input: $input) { id } }',
    {
      input: {
        name: 'Echo',
        description: 'Prints its arguments.',
        container: 'local',
        command: `node "${PROGRAM}" argv {args}`,
        args: [],
      },
    },
    operator,
  );
  model = res.body.data.createModel.id;
}, 120000);
afterAll(() => h?.close());

it('an owner invites, a newcomer signs up through the link, accepts, runs a job, and loses access when removed', async () => {
  const owner = await signUp(h, 'olga');
  const { page } = owner;
  await nav(page, 'Account').click();
  await page.getByLabel('New team').fill('Lab');
  await page.getByRole('button', { name: 'Create team' }).click();
  await page.getByRole('list', { name: 'Your teams' }).getByRole('link', { name: 'Lab' }).click();
  await page.getByRole('heading', { name: 'Team Lab' }).waitFor();
  const teamId = page.url().split('/').pop()!;
  // A job of the team, there before the newcomer comes.
  await deploy(h.app, `Bearer ${await tokenOf(owner, teamId)}`, model, {}, 'team run');

  await page.getByLabel('Email or username').fill('bruno');
  await page.getByLabel('Role', { exact: true }).selectOption('MEMBER');
  await page.getByRole('button', { name: 'Invite' }).click();
  const link = (await page.getByLabel('Invitation link').textContent())!;
  expect(link).toMatch(new RegExp(`^${h.url}/invites/accept\\?token=[\\w-]{43}$`));
  await page.getByRole('list', { name: 'Pending invitations' }).getByText('bruno as member').waitFor();
  await page
    .getByRole('table', { name: 'Audit log' })
    .getByRole('cell', { name: 'member.invited' })
    .waitFor();
  await screenshot(page, 'team');

  // The newcomer opens the link without an account: sign-up first, then back to the invitation.
  const context = await h.browser.newContext({ viewport: { width: 1280, height: 860 }, baseURL: h.url });
  const guest = await context.newPage();
  const errors = watchErrors(guest);
  await guest.goto(link);
  await guest.getByRole('link', { name: 'Create one' }).click();
  await guest.getByLabel('Username', { exact: true }).fill('bruno');
  await guest.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await guest.getByRole('button', { name: /sign up|create/i }).click();
  await guest.getByRole('heading', { name: 'Join team Lab' }).waitFor();
  await guest.getByText('olga invites you to the team Lab as member').waitFor();
  await screenshot(guest, 'invite-accept');
  await guest.getByRole('button', { name: 'Accept' }).click();
  await guest.getByText('Acting as team Lab').waitFor();
  await guest.locator('.job-row', { hasText: 'team run' }).waitFor();

  // They run one for the team.
  await nav(guest, 'Run a model').click();
  await guest.getByRole('listitem', { name: 'Echo' }).getByRole('link', { name: 'Run' }).click();
  await guest.getByLabel('Run name').fill('bruno run');
  await guest.getByRole('button', { name: 'Run', exact: true }).click();
  await guest.waitForURL(/\/jobs\/[\w-]+$/);
  await nav(guest, 'Jobs').click();
  await guest.locator('.job-row', { hasText: 'bruno run' }).waitFor();
  expect(await guest.locator('.job-row').count()).toBe(2);

  // The owner sees them and removes them; their page loses the team at its next request.
  await page.reload();
  await page.getByRole('cell', { name: /bruno/ }).first().waitFor();
  await page.getByRole('button', { name: 'Remove bruno' }).click();
  await eventually(async () =>
    expect(await page.getByRole('button', { name: 'Remove bruno' }).count()).toBe(0),
  );
  await guest.reload();
  await guest.getByRole('heading', { name: 'Jobs', level: 1 }).waitFor();
  await eventually(async () => expect(await guest.getByText('Acting as team Lab').count()).toBe(0));
  await eventually(async () =>
    expect(await guest.locator('.job-row', { hasText: 'team run' }).count()).toBe(0),
  );

  // The audit log tells it all.
  await page.getByLabel('Person').selectOption({ label: 'olga' });
  await page.getByRole('cell', { name: 'member.removed' }).waitFor();
  expect(errors.filter((e) => !/401|403|404/.test(e))).toEqual([]);
  await context.close();
});
