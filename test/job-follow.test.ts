import { createLogger } from '../src/common/logger';
import { ExecutorUnavailableError, type Executor, type JobObserver } from '../src/executors/executor.port';
import { JobTransition } from '../src/jobs/job.entity';
import { JobFollow, type FollowContext } from '../src/jobs/job.follow';
import { startTestApp, type TestApp } from './helpers/app';
import { deploy, programModel } from './helpers/jobs';

/**
 * JobFollow against executors' orders of reports: the real job service and database, and an
 * executor standing in for a cluster that is looked at now and then (it may see a job only once it
 * has ended). The service runs no worker: the test is the worker.
 */

jest.setTimeout(60_000);

let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({ ROLES: 'api', LOCAL_EXECUTOR_TRUST: 'any' });
});
afterAll(async () => {
  await t.close();
});

/** A detached executor whose job ran and ended between two looks: it reports the end alone. */
function endsUnseen(exitCode: number): Executor {
  return {
    name: 'local',
    detached: true,
    submit: async (_spec, observer: JobObserver) => {
      setImmediate(() => observer.ended({ exitCode, signal: null, reason: null }));
      return 'cluster-job-1';
    },
    adopt: async () => null,
    cancel: async () => undefined,
    stopOrphan: async () => false,
    close: async () => undefined,
  };
}

async function followed(
  executor: Executor,
  more: Partial<FollowContext> = {},
): Promise<{ status: string; path: (string | null)[]; error: string | null; infrastructure: boolean }> {
  const auth = `Bearer ${await t.tokenFor('follow-owner')}`;
  const model = await programModel(t, auth, 'argv');
  const { jobId } = await deploy(t, auth, model, {});
  const { jobs, media, deployments } = t.runtime.services;
  const workerId = '00000000-0000-4000-8000-000000000001';
  const job = await jobs.transition(jobId, 'starting', { workerId });
  expect(job?.status).toBe('starting');
  const ctx: FollowContext = {
    workerId,
    jobs,
    media,
    deployments,
    jobsDir: t.runtime.config.jobsDir,
    executor,
    log: createLogger('error'),
    publish: (j, lines) => jobs.publishLines(j, lines),
    clusterRetrySeconds: 3600,
    notePending: () => undefined,
    untilAvailable: (step) => step(false),
    ...more,
  };
  const follow = new JobFollow(ctx, job!, false);
  await follow.done;
  const now = await jobs.byId(jobId);
  const path = (
    await t.runtime.orm.em.fork().find(JobTransition, { job: jobId }, { orderBy: { id: 'asc' } })
  ).map((tr) => tr.toStatus);
  return { status: now!.status, path, error: now!.error, infrastructure: now!.infrastructureFailure };
}

it('records a success reported while the job is still starting, through running', async () => {
  const { status, path } = await followed(endsUnseen(0));
  expect(status).toBe('succeeded');
  expect(path).toEqual(['queued', 'starting', 'running', 'succeeded']);
});

it('records a failure reported while the job is still starting, without running', async () => {
  const { status, path } = await followed(endsUnseen(3));
  expect(status).toBe('failed');
  expect(path).toEqual(['queued', 'starting', 'failed']);
});

/**
 * A cluster that cannot be reached for the first `outages` submissions; the first of them reached
 * it all the same (its answer lost), as an sbatch that timed out after the controller took it.
 */
function unreachable(outages: number) {
  const calls: { retry: boolean }[] = [];
  let accepted: JobObserver | null = null;
  const executor: Executor = {
    name: 'local',
    detached: true,
    submit: async (_spec, observer, retry = false) => {
      calls.push({ retry });
      if (calls.length === 1) accepted = observer;
      if (calls.length <= outages)
        throw new ExecutorUnavailableError('Slurm: Unable to contact slurm controller (connect failure)');
      // A retry finds the job the first attempt submitted instead of submitting it again.
      if (!retry || !accepted) throw new Error('submitted twice');
      setImmediate(() => {
        observer.running(['node-1']);
        observer.ended({ exitCode: 0, signal: null, reason: null });
      });
      return 'cluster-job-1';
    },
    adopt: async () => null,
    cancel: async () => undefined,
    stopOrphan: async () => false,
    close: async () => undefined,
  };
  return { executor, calls };
}

it('keeps a job starting, saying why, while the cluster cannot be reached, and submits it once it answers', async () => {
  const { executor, calls } = unreachable(2);
  const reasons: (string | null)[] = [];
  const { status, path } = await followed(executor, {
    notePending: (_id, reason) => reasons.push(reason),
  });
  expect(status).toBe('succeeded');
  expect(path).toEqual(['queued', 'starting', 'running', 'succeeded']);
  expect(calls).toEqual([{ retry: false }, { retry: true }, { retry: true }]);
  expect(reasons[0]).toMatch(/Unable to contact slurm controller.*\(trying again\)/);
});

it('fails a job as an infrastructure failure once the cluster has not answered for CLUSTER_RETRY_SECONDS', async () => {
  const { executor, calls } = unreachable(Infinity);
  const { status, path, error, infrastructure } = await followed(executor, { clusterRetrySeconds: 2 });
  expect(status).toBe('failed');
  expect(path).toEqual(['queued', 'starting', 'failed']);
  expect(error).toMatch(/Unable to contact slurm controller.*no answer for 2 s/);
  expect(infrastructure).toBe(true);
  expect(calls.length).toBeGreaterThan(1);
});
