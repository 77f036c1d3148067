import { startTestApp, type TestApp } from './helpers/app';
import { deploy, PROGRAM, programModel, waitForJob } from './helpers/jobs';
import { readEvents, type Sse } from './helpers/sse';

jest.setTimeout(90_000);

let t: TestApp;
let alice: string;
let bob: string;
let lines: string;

beforeAll(async () => {
  t = await startTestApp({ LOCAL_EXECUTOR_TRUST: 'any' });
  alice = `Bearer ${await t.tokenFor('alice')}`;
  bob = `Bearer ${await t.tokenFor('bob')}`;
  lines = await programModel(t, alice, 'lines', { command: `node "${PROGRAM}" lines 5 100 {args}` });
});
afterAll(() => t.close());

/** Reads the stream at `path` of the suite's app (see readEvents). */
const read = (path: string, auth: string | undefined, opts: Parameters<typeof readEvents>[2] = {}) =>
  readEvents(`${t.url}${path}`, auth, opts);

/** The events of a successful run of the `lines` program printing `n` lines. */
const history = (n: number) => [
  'transition:queued',
  'transition:starting',
  'transition:running',
  ...Array.from({ length: n }, (_, i) => `line ${i + 1}`),
  'transition:succeeded',
];

const summary = (events: Sse[]) =>
  events.map((e) => (e.event === 'log' ? e.data.line : `${e.event}:${e.data.status}`));

describe('GET /api/v1/jobs/{id}/events', () => {
  it("streams a job's transitions and lines with ids, and ends when the job ends", async () => {
    const { jobId } = await deploy(t, alice, lines, {});
    const { status, type, events } = await read(`/api/v1/jobs/${jobId}/events`, alice);
    expect(status).toBe(200);
    expect(type).toMatch(/^text\/event-stream/);
    expect(summary(events)).toEqual(history(5));
    expect(events.every((e) => e.data.job_id === jobId)).toBe(true);
    expect(events.filter((e) => e.event === 'log').every((e) => e.data.status === 'running')).toBe(true);
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    // Ids increase in the order of the events.
    const ordered = events.map((e) => e.id.split('.').map(Number));
    for (let i = 1; i < ordered.length; i++)
      expect(ordered[i][0] > ordered[i - 1][0] || ordered[i][1] > ordered[i - 1][1]).toBe(true);
  });

  it('resumes after Last-Event-ID, even after the job ended; past its last event it answers 204', async () => {
    const { jobId } = await deploy(t, alice, lines, {});
    await waitForJob(t, alice, jobId);
    const all = (await read(`/api/v1/jobs/${jobId}/events`, alice)).events;
    const line2 = all.find((e) => e.data.line === 'line 2')!;
    const resumed = await read(`/api/v1/jobs/${jobId}/events`, alice, { lastEventId: line2.id });
    expect(summary(resumed.events)).toEqual(['line 3', 'line 4', 'line 5', 'transition:succeeded']);
    const running = all.find((e) => e.data.status === 'running' && e.event === 'transition')!;
    const fromQuery = await read(`/api/v1/jobs/${jobId}/events?last_event_id=${running.id}`, alice);
    expect(fromQuery.events[0].data.line).toBe('line 1');
    const end = await read(`/api/v1/jobs/${jobId}/events`, alice, { lastEventId: all.at(-1)!.id });
    expect(end.status).toBe(204);
  });

  it('shows the history of a running job, then its live events', async () => {
    const slow = await programModel(t, alice, 'lines', { command: `node "${PROGRAM}" lines 6 300 {args}` });
    const { jobId } = await deploy(t, alice, slow, {});
    await waitForJob(t, alice, jobId, (j) => j.logTail.includes('line 2'));
    const { events } = await read(`/api/v1/jobs/${jobId}/events`, alice);
    expect(summary(events)).toEqual(history(6));
  });

  it("answers 404 for another owner's job, 401 without credentials, 400 for a malformed id", async () => {
    const { jobId } = await deploy(t, alice, lines, {});
    expect((await read(`/api/v1/jobs/${jobId}/events`, bob)).status).toBe(404);
    expect((await read(`/api/v1/jobs/${jobId}/events`, undefined)).status).toBe(401);
    expect((await read(`/api/v1/jobs/${jobId}/events`, alice, { lastEventId: 'yesterday' })).status).toBe(
      400,
    );
  });
});

describe('GET /api/v1/jobs/events', () => {
  it("streams every job of the principal live, never another's, and replays after Last-Event-ID", async () => {
    // A stream answers its headers once it listens: from then on, nothing is missed.
    const opening = () => {
      let opened!: () => void;
      return { open: new Promise<void>((r) => (opened = r)), opened };
    };
    const bobOpening = opening();
    const bobs = read('/api/v1/jobs/events', bob, {
      opened: bobOpening.opened,
      stop: (e) => e.some((x) => x.data.status === 'succeeded'),
    });
    const wanted: { id?: string } = {};
    const aliceOpening = opening();
    const live = read('/api/v1/jobs/events', alice, {
      opened: aliceOpening.opened,
      stop: (e) => e.some((x) => x.data.job_id === wanted.id && x.data.status === 'succeeded'),
    });
    await Promise.all([bobOpening.open, aliceOpening.open]);
    const first = await deploy(t, alice, lines, {});
    await waitForJob(t, alice, first.jobId);
    const second = await deploy(t, alice, lines, {});
    wanted.id = second.jobId;
    // Events of jobs of earlier tests may come too; these two jobs' events all come.
    const events = (await live).events.filter((e) => [first.jobId, second.jobId].includes(e.data.job_id));
    expect(events.at(-1)!.data).toMatchObject({ job_id: second.jobId, status: 'succeeded' });
    expect(summary(events.filter((e) => e.data.job_id === first.jobId))).toEqual(history(5));
    // Bob's own job ends his stream; he saw none of Alice's events.
    await deploy(t, bob, await programModel(t, bob, 'argv'), {});
    const theirs = (await bobs).events;
    expect(theirs.some((e) => e.data.job_id === first.jobId || e.data.job_id === second.jobId)).toBe(false);

    // Resuming after the first job's end replays the second job from the database.
    const firstEnd = events.find((e) => e.data.job_id === first.jobId && e.data.status === 'succeeded')!;
    const replay = await read('/api/v1/jobs/events', alice, {
      lastEventId: firstEnd.id,
      stop: (e) => e.some((x) => x.data.job_id === second.jobId && x.data.status === 'succeeded'),
    });
    expect(replay.events.some((e) => e.data.job_id === first.jobId)).toBe(false);
    expect(summary(replay.events.filter((e) => e.data.job_id === second.jobId))).toEqual(
      summary(events.filter((e) => e.data.job_id === second.jobId)),
    );
  });
});
