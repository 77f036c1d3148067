import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { startTestApp, type TestApp } from '../test/helpers/app';
import {
  databaseText,
  piecesOf,
  runSecretJob,
  secretModel,
  secretValues,
  setSecrets,
  sha256,
} from '../test/helpers/secret-jobs';
import { requireCluster, sharedDir } from './helpers';

/**
 * Secrets on Slurm (issue 32): a 0600 file in the job's directory, its path in `<NAME>_FILE`; the
 * value is on no sbatch command line, in no environment Slurm keeps, and redacted everywhere else.
 */
jest.setTimeout(180_000);

let t: TestApp;
let jobsDir: string;
let operator: string;

beforeAll(async () => {
  requireCluster();
  jobsDir = sharedDir('media-slurm-secrets-');
  t = await startTestApp({
    EXECUTOR: 'slurm',
    SLURM_POLL_SECONDS: '1',
    JOBS_DIR: jobsDir,
    ADMIN_SUBJECTS: 'operator',
  });
  // Without a container runtime, Slurm runs operators' models only.
  operator = `Bearer ${await t.tokenFor('operator')}`;
});
afterAll(() => t.close());

it('gives a job its secrets as 0600 files and shows their values nowhere else', async () => {
  const values = secretValues();
  await setSecrets(t, operator, values);
  const modelId = await secretModel(t, operator);
  const run = await runSecretJob(t, operator, modelId, values, null, 120_000);

  for (const name of ['HF_TOKEN', 'LICENCE_KEY'] as const)
    expect(run.result[name]).toEqual({ from: 'file', mode: '600', sha256: sha256(values[name]) });
  // The path is in the environment, the value only in the file (whose printed content is redacted).
  expect(run.logTail).toMatch(/env HF_TOKEN_FILE=\S+\/\.secrets\/HF_TOKEN/);
  expect(run.logTail).not.toMatch(/^env HF_TOKEN=/m);
  expect(run.logTail).toContain('[secret HF_TOKEN]');
  expect(run.logTail).toContain('[secret LICENCE_KEY]');

  // What Slurm keeps of the job: its command, its environment and its batch script.
  const externalId = (await t.http().get(`/api/v1/jobs/${run.jobId}`).set('authorization', operator)).body
    .external_id as string;
  const slurmText = ['show job -dd', 'write batch_script'].map((cmd) => {
    try {
      return execFileSync(
        'scontrol',
        [...cmd.split(' '), externalId, ...(cmd.startsWith('write') ? ['-'] : [])],
        {
          encoding: 'utf8',
          stdio: 'pipe',
        },
      );
    } catch (err) {
      return String((err as { stdout?: string }).stdout ?? ''); // forgotten already: nothing to leak
    }
  });
  for (const { label, text } of [
    ...run.seen,
    { label: 'the database', text: await databaseText(t.databaseUrl) },
    { label: "Slurm's record of the job", text: slurmText.join('\n') },
  ])
    for (const value of [values.HF_TOKEN, ...piecesOf(values.LICENCE_KEY)])
      expect({ label, leaks: text.includes(value) }).toEqual({ label, leaks: false });
  // The files went with the job's directory.
  expect(existsSync(path.join(jobsDir, run.jobId))).toBe(false);
});
