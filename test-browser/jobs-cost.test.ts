import { eventually, screenshot, signUp, startHarness, tokenOf, type Harness } from './helpers';

/** Issue 31: the jobs list sorts by cost (docs/governance.md, "Sorting by cost"). */
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
}, 120000);
afterAll(() => h?.close());

it('sorts the jobs list by cost across machine types, ended jobs only, and back to newest first', async () => {
  const person = await signUp(h, 'coster');
  const auth = `Bearer ${await tokenOf(person)}`;
  const owner = (await h.app.gql('{ me { id } }', {}, auth)).body.data.me.id as string;
  // Default prices: cpu 0.00002 and gpu 0.0008 a second. Longest is not dearest: 1,000 cpu seconds
  // cost 0.02, 100 gpu seconds 0.08. Created oldest first in this order; one still runs.
  const jobs: [name: string, type: string, seconds: number | null][] = [
    ['gpu-long', 'gpu', 100],
    ['cpu-short', 'cpu', 10],
    ['cpu-long', 'cpu', 1000],
    ['gpu-short', 'gpu', 10],
    ['still-running', 'gpu', null],
  ];
  const em = h.app.runtime.orm.em.fork();
  for (const [i, [name, type, seconds]] of jobs.entries())
    await em.execute(
      `with d as (
         insert into deployments (id, owner_type, owner_id, name, model_id, args, target_asset_id, created_at)
         values (gen_random_uuid(), 'user', ?, ?, gen_random_uuid(), '{}', gen_random_uuid(), now() - ? * interval '1 minute')
         returning id, model_id, created_at)
       insert into jobs (id, deployment_id, model_id, owner_type, owner_id, status, executor, argv, container,
                         machine_type, machine_count, timeout_seconds, created_at, started_at, finished_at,
                         run_seconds, machine_micros, updated_at)
       select gen_random_uuid(), d.id, d.model_id, 'user', ?, ?, 'local', '[]', 'c', ?, 1, 3600, d.created_at,
              d.created_at, d.created_at + ?::float8 * interval '1 second', ?::float8, ?::float8 * 1000000, now()
       from d`,
      [
        owner,
        name,
        10 - i,
        owner,
        seconds === null ? 'running' : 'succeeded',
        type,
        seconds,
        seconds,
        seconds,
      ],
    );

  const { page } = person;
  await page.reload();
  const names = () => page.locator('.job-row .job-name strong').allTextContents();
  await eventually(async () =>
    expect(await names()).toEqual(['still-running', 'gpu-short', 'cpu-long', 'cpu-short', 'gpu-long']),
  );
  await page.getByLabel('Sort').selectOption({ label: 'Most expensive first' });
  await eventually(async () =>
    expect(await names()).toEqual(['gpu-long', 'cpu-long', 'gpu-short', 'cpu-short']),
  );
  expect(await page.locator('.job-row .job-cost').allTextContents()).toEqual([
    '0.0800 USD',
    '0.0200 USD',
    '0.0080 USD',
    '0.0002 USD',
  ]);
  await screenshot(page, 'jobs-by-cost');
  await page.getByLabel('Sort').selectOption({ label: 'Cheapest first' });
  await eventually(async () =>
    expect(await names()).toEqual(['cpu-short', 'gpu-short', 'cpu-long', 'gpu-long']),
  );
  await page.getByLabel('Sort').selectOption({ label: 'Newest first' });
  await eventually(async () => expect(await names()).toHaveLength(5));
  expect(person.errors).toEqual([]);
});
