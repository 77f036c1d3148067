import { startTestApp, type TestApp } from './helpers/app';
import { deploy, programModel, waitForJob } from './helpers/jobs';

jest.setTimeout(120_000);

let t: TestApp;
let alice: string;

beforeAll(async () => {
  t = await startTestApp({
    LOCAL_EXECUTOR_TRUST: 'any',
    LOCAL_EXECUTOR_MEMORY_MB: '256',
    LOCAL_EXECUTOR_MAX_OPEN_FILES: '64',
    LOCAL_EXECUTOR_MAX_PROCESSES: '16',
  });
  alice = `Bearer ${await t.tokenFor('alice')}`;
});
afterAll(() => t.close());

/** Runs the fixture program in `mode` as a job and answers how it ended. */
async function run(mode: string) {
  const { jobId } = await deploy(t, alice, await programModel(t, alice, mode), {});
  return waitForJob(t, alice, jobId);
}

describe('local jobs under resource limits', () => {
  it('stops a program that allocates without bound, saying which limit', async () => {
    const job = await run('alloc');
    expect(job.status).toBe('FAILED');
    expect(job.error).toMatch(/memory limit of 256 MB \(LOCAL_EXECUTOR_MEMORY_MB\)/);
  });

  it('fails a program that opens files without bound, saying which limit', async () => {
    const job = await run('files');
    expect(job.status).toBe('FAILED');
    expect(job.error).toMatch(/limit of 64 open files \(LOCAL_EXECUTOR_MAX_OPEN_FILES\)/);
  });

  it('stops a program that starts processes without bound, saying which limit', async () => {
    const job = await run('fork');
    expect(job.status).toBe('FAILED');
    expect(job.error).toMatch(/more than 16 processes \(LOCAL_EXECUTOR_MAX_PROCESSES\)/);
  });

  it('runs a program within its limits as before', async () => {
    const job = await run('argv');
    expect(job.status).toBe('SUCCEEDED');
  });
});
