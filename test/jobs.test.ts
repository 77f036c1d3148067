import { startTestApp, type TestApp } from './helpers/app';
import { BUILTIN, deploy, waitForJob } from './helpers/jobs';
import { uploadFile } from './helpers/media';

let t: TestApp;
let alice: string;

beforeAll(async () => {
  t = await startTestApp();
  alice = `Bearer ${await t.tokenFor('alice')}`;
});
afterAll(() => t.close());

describe('a built-in model from upload to result', () => {
  it('counts the words of an uploaded text file', async () => {
    const text = (await uploadFile(t, alice, Buffer.from('one two three\nfour five\n'), 'words.txt')).body
      .media.id;
    const { jobId, targetAssetId } = await deploy(t, alice, BUILTIN.wordcount, { text });
    const job = await waitForJob(t, alice, jobId);
    expect(job).toMatchObject({
      status: 'SUCCEEDED',
      exitCode: 0,
      error: null,
      result: { lines: 2, words: 5, characters: 24 },
    });
    expect(job.resultUrls).toHaveLength(1);
    expect(job.resultUrls[0]).toContain(`/media/${targetAssetId}.json`);
  });
});
