import type { MikroORM } from '@mikro-orm/postgresql';
import { Logger as GraphileLogger, run, type Runner } from 'graphile-worker';
import { randomUUID } from 'node:crypto';
import { constants, createWriteStream, mkdirSync } from 'node:fs';
import { lstat, mkdir, open, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Logger } from '../common/logger';
import type { DeploymentService } from '../deployments/deployment.service';
import { DISPATCH_TASK } from '../deployments/deployment.service';
import { CHANNELS, type EventBus } from '../events/event-bus';
import type { Executor, JobExit, RunningJob } from '../executors/executor.port';
import type { MediaService } from '../media/media.service';
import { Job, type JobOutput } from './job.entity';
import { JobLog, type LogLine } from './job.log';
import type { JobEvent, JobService } from './job.service';
import { isTerminal } from './job.states';

/** A worker whose heartbeat (database time) is older than this is gone; its jobs are reconciled. */
const STALE_WORKER_SECONDS = 30;
const HEARTBEAT_MS = 5_000;
const RECONCILE_MS = 10_000;
/** A worker that could not beat for this long does not judge others (it may be the one cut off). */
const OWN_BEAT_TRUST_MS = 15_000;
/** Bounds on what a job may leave in its output directory. */
export const MAX_OUTPUT_FILES = 100;
const MAX_OUTPUT_DEPTH = 8;

export interface JobRunnerOptions {
  databaseUrl: string;
  concurrency: number;
}

/** The log-line payload on CHANNELS.jobLogs. */
export interface JobLogEvent {
  jobId: string;
  ownerType: Job['ownerType'];
  ownerId: string;
  lines: LogLine[];
}

/** Why a dispatch task gives its job back to the queue: graphile-worker retries it later. */
class WorkerStopping extends Error {}

/**
 * The worker role: takes dispatch tasks from the PostgreSQL queue (graphile-worker), runs each
 * job on the executor and follows it to its end, turns its output files into media, and records
 * every transition. A heartbeat marks the process alive; jobs of workers that stopped beating
 * are reconciled, so nothing stays running forever and nothing runs twice.
 */
export class JobRunner {
  readonly instanceId = randomUUID();
  private readonly host = os.hostname();
  private runner: Runner | null = null;
  private readonly timers: NodeJS.Timeout[] = [];
  /** Jobs this worker has claimed and not finished with, and their executor handle once known. */
  private readonly mine = new Map<string, string | null>();
  private offEvents: (() => void)[] = [];
  private stopping = false;
  private lastBeat = 0;

  constructor(
    private readonly orm: MikroORM,
    private readonly jobs: JobService,
    private readonly deployments: DeploymentService,
    private readonly media: MediaService,
    private readonly executor: Executor,
    private readonly bus: EventBus,
    private readonly log: Logger,
    private readonly opts: JobRunnerOptions,
  ) {}

  async start(): Promise<void> {
    await this.beat();
    this.every(HEARTBEAT_MS, () => this.beat());
    // A job of this worker that reached an end elsewhere (canceled by its owner through any
    // process, or failed by a reconciliation) must not keep running here.
    this.offEvents = [
      this.bus.on(CHANNELS.jobs, (payload) => {
        const e = payload as JobEvent;
        if (isTerminal(e.status)) void this.ended(e.jobId);
      }),
      // Events of a gap in the connection are lost: look at the jobs themselves.
      this.bus.onReconnect(() => {
        for (const jobId of this.mine.keys())
          void this.jobs.byId(jobId).then(async (job) => {
            if (job && isTerminal(job.status)) await this.ended(jobId);
          });
      }),
    ];
    await this.reconcile();
    this.every(RECONCILE_MS, () => this.reconcile());
    this.runner = await run({
      connectionString: this.opts.databaseUrl,
      concurrency: this.opts.concurrency,
      maxPoolSize: Math.min(10, this.opts.concurrency + 2),
      noHandleSignals: true,
      pollInterval: 2000,
      logger: graphileLogger(this.log),
      taskList: {
        [DISPATCH_TASK]: async (payload) => this.dispatch((payload as { jobId: string }).jobId),
      },
    });
  }

  /**
   * Stops taking tasks and, at the same time, stops the running jobs (they fail: the worker shut
   * down); tasks that arrive meanwhile go back to the queue for another worker or the next start.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const t of this.timers) clearInterval(t);
    await Promise.all([this.runner?.stop(), this.executor.close()]);
    for (const off of this.offEvents) off();
    await this.orm.em.fork().execute('delete from worker_instances where id = ?', [this.instanceId]);
  }

  /** A job of this worker has ended elsewhere: its processes must stop here. */
  private async ended(jobId: string): Promise<void> {
    const externalId = this.mine.get(jobId);
    if (externalId) await this.executor.cancel(externalId);
  }

  /** Registers or re-registers this worker, on the database's clock. */
  private async beat(): Promise<void> {
    await this.orm.em.fork().execute(
      `insert into worker_instances (id, host, pid, started_at, seen_at) values (?, ?, ?, now(), now())
       on conflict (id) do update set seen_at = now()`,
      [this.instanceId, this.host, process.pid],
    );
    this.lastBeat = Date.now();
  }

  private every(ms: number, fn: () => Promise<unknown>): void {
    const timer = setInterval(() => {
      if (!this.stopping) void fn().catch((err) => this.log.warn({ err }, 'job worker housekeeping failed'));
    }, ms);
    timer.unref();
    this.timers.push(timer);
  }

  /** The dispatch task: idempotent, since only the worker that moves a job out of `queued` runs it. */
  private async dispatch(jobId: string): Promise<void> {
    if (this.stopping) throw new WorkerStopping('the worker is shutting down; the job stays queued');
    this.mine.set(jobId, null);
    try {
      const job = await this.jobs.transition(jobId, 'starting', { workerId: this.instanceId });
      if (job) await this.run(job);
    } finally {
      this.mine.delete(jobId);
    }
  }

  private async run(job: Job): Promise<void> {
    const workDir = this.deployments.workDirOf(job.id);
    const outputDir = path.join(workDir, 'output');
    const log = new JobLog({
      publish: (lines) => this.jobs.publishLines(job, lines),
      save: (tail) => this.jobs.saveLogTail(job.id, tail),
      failed: (err) => this.log.warn({ err, jobId: job.id }, 'job output not published or saved'),
    });
    let running: RunningJob | null = null;
    try {
      // Synchronous on purpose: a few tiny syscalls, where the thread pool added milliseconds.
      mkdirSync(outputDir, { recursive: true });
      await this.stageInputs(job, workDir);
      running = await this.executor.submit(
        {
          jobId: job.id,
          argv: job.argv,
          env: {},
          container: job.container,
          machineType: job.machineType,
          machineCount: job.machineCount,
          timeoutSeconds: job.timeoutSeconds,
          inputs: job.inputs.map((i) => i.path),
          workDir,
          outputDir,
        },
        (stream, line) => log.line(stream, line),
      );
      this.mine.set(job.id, running.externalId);
      if (!(await this.jobs.transition(job.id, 'running', { externalId: running.externalId })))
        await this.executor.cancel(running.externalId); // canceled while starting
      const exit = await running.finished;
      await log.end();
      await this.finish(job, exit, log, outputDir);
    } catch (err) {
      // Never leave a process behind a job that is recorded as ended.
      if (running) {
        await this.executor.cancel(running.externalId);
        await running.finished;
      }
      await log.end();
      this.log.warn({ err, jobId: job.id }, 'job failed before it could finish');
      await this.media.discardJobOutputs(job.id).catch(() => undefined);
      await this.jobs
        .transition(job.id, 'failed', { error: (err as Error).message, logTail: log.tail() })
        .catch((e) => this.log.error({ err: e, jobId: job.id }, 'could not record a failed job'));
    } finally {
      await rm(workDir, { recursive: true, force: true });
    }
  }

  private async finish(job: Job, exit: JobExit, log: JobLog, outputDir: string): Promise<void> {
    const ended = { exitCode: exit.exitCode, logTail: log.tail() };
    // Lost, stopped by a shutdown, or what the executor says: the infrastructure failed, not the program.
    const infrastructure =
      exit.infrastructure === true || exit.reason === 'lost' || exit.reason === 'canceled';
    const fail = (error: string) =>
      this.jobs.transition(job.id, 'failed', { ...ended, error, infrastructure });
    if (exit.reason === 'canceled') {
      // Canceled by its owner: already `canceled`. Otherwise the worker itself is shutting down.
      if (!(await fail('the worker shut down while the job ran; its processes were stopped')))
        await this.jobs.saveLogTail(job.id, ended.logTail);
    } else if (exit.reason === 'lost') {
      await fail('the executor lost track of the job; its processes were stopped');
    } else if (exit.reason === 'timeout') {
      await fail(`timed out after ${job.timeoutSeconds} s; its processes were stopped`);
    } else if (exit.exitCode !== 0) {
      await fail(
        `the program ${exit.exitCode === null ? `was killed by ${exit.signal}` : `exited with code ${exit.exitCode}`}`,
      );
    } else {
      const output: JobOutput = { files: await this.storeOutputs(job, outputDir), result: log.result() };
      // Its outputs become visible in the same statement; canceled at the last moment, none do.
      if (!(await this.jobs.transition(job.id, 'succeeded', { ...ended, output, publishOutputs: true })))
        await this.media.discardJobOutputs(job.id);
    }
  }

  /**
   * Every regular file the program wrote, stored as media of the job's owner. Symlinks and files
   * with other links are refused (opened without following links, checked on the open file), so
   * a job cannot publish files from elsewhere on the host.
   */
  private async storeOutputs(job: Job, outputDir: string): Promise<JobOutput['files']> {
    const files = await listFiles(outputDir);
    if (files.length > MAX_OUTPUT_FILES)
      throw new Error(
        `the program wrote more than ${MAX_OUTPUT_FILES} files; at most ${MAX_OUTPUT_FILES} are kept`,
      );
    const deployment = (await this.deployments.byIds([job.deployment.id]))[0];
    // The deployment's target_asset_id names the first output its jobs kept; a retry of a job
    // that kept one gets ids of its own.
    const targetId =
      deployment && !(await this.media.idTaken(deployment.targetAssetId))
        ? deployment.targetAssetId
        : undefined;
    const stored: JobOutput['files'] = [];
    for (const name of files) {
      const handle = await open(path.join(outputDir, name), constants.O_RDONLY | constants.O_NOFOLLOW).catch(
        () => null,
      );
      if (!handle) continue;
      const stat = await handle.stat();
      if (!stat.isFile() || stat.nlink !== 1) {
        await handle.close();
        continue;
      }
      try {
        const asset = await this.media.storeJobOutput(
          { type: job.ownerType, id: job.ownerId },
          {
            stream: handle.createReadStream(),
            filename: name,
            jobId: job.id,
            id: stored.length === 0 ? targetId : undefined,
          },
        );
        stored.push({
          mediaId: asset.id,
          name: asset.imageName,
          mediaKey: this.media.keyOf(asset),
          contentType: asset.contentType,
          size: asset.size,
        });
      } catch (err) {
        await handle.close().catch(() => undefined);
        throw new Error(`could not keep the output ${name}: ${(err as Error).message}`);
      }
    }
    return stored;
  }

  /**
   * Inputs must still exist. Those not read in place (storage that is not this machine's disk)
   * are copied to their path, relative to the job's directory, before the program starts.
   */
  private async stageInputs(job: Job, workDir: string): Promise<void> {
    if (!job.inputs.length) return;
    const assets = new Map((await this.media.byIds(job.inputs.map((i) => i.mediaId))).map((a) => [a.id, a]));
    for (const input of job.inputs) {
      const asset = assets.get(input.mediaId);
      if (!asset) throw new Error(`the input media ${input.mediaId} was deleted before the job started`);
      if (path.isAbsolute(input.path)) continue;
      const bytes = await this.media.read(asset);
      if (!bytes) throw new Error(`the input media ${input.mediaId} has no stored file`);
      const target = path.resolve(workDir, input.path);
      await mkdir(path.dirname(target), { recursive: true });
      await pipeline(bytes, createWriteStream(target));
    }
  }

  /**
   * Jobs left `starting` or `running` by a worker that is gone (no heartbeat for 30 s on the
   * database's clock, or an earlier process on this host that no longer exists), and jobs of this
   * worker it is no longer following, fail with a clear error. Their leftover processes on this
   * host are stopped: their output can no longer be followed.
   */
  async reconcile(): Promise<void> {
    if (Date.now() - this.lastBeat > OWN_BEAT_TRUST_MS) return;
    const em = this.orm.em.fork();
    const workers: { id: string; host: string; pid: number; stale: boolean }[] = await em.execute(
      `select id, host, pid, seen_at < now() - make_interval(secs => ?) as stale from worker_instances`,
      [STALE_WORKER_SECONDS],
    );
    const dead = new Set(
      workers
        .filter(
          (w) => w.id !== this.instanceId && (w.stale || (w.host === this.host && !processAlive(w.pid))),
        )
        .map((w) => w.id),
    );
    const alive = new Set(workers.filter((w) => !dead.has(w.id)).map((w) => w.id));
    const unfinished = await em.find(
      Job,
      { status: { $in: ['starting', 'running'] } },
      { fields: ['id', 'workerId', 'externalId'] },
    );
    for (const job of unfinished) {
      const lost = job.workerId === this.instanceId ? !this.mine.has(job.id) : !alive.has(job.workerId ?? '');
      if (!lost) continue;
      const worker = workers.find((w) => w.id === job.workerId);
      const here = !worker || worker.host === this.host;
      const stopped = here && job.externalId ? await this.executor.stopOrphan(job.id, job.externalId) : false;
      const moved = await this.jobs.transition(job.id, 'failed', {
        infrastructure: true,
        error:
          `the worker running this job stopped (crash or restart) before it finished` +
          (stopped ? '; its leftover processes were stopped' : ''),
      });
      if (moved) this.log.warn({ jobId: job.id, worker: job.workerId }, 'reconciled a job of a lost worker');
    }
    if (dead.size)
      await em.execute('delete from worker_instances where id = any(?::uuid[])', [
        `{${[...dead].join(',')}}`,
      ]);
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Regular files below `dir`, as sorted relative paths, at most MAX_OUTPUT_FILES + 1. */
async function listFiles(dir: string, prefix = '', depth = 0): Promise<string[]> {
  const out: string[] = [];
  if (depth > MAX_OUTPUT_DEPTH) return out;
  for (const name of (await readdir(path.join(dir, prefix)).catch(() => [] as string[])).sort()) {
    const rel = path.join(prefix, name);
    const stat = await lstat(path.join(dir, rel));
    if (stat.isDirectory()) out.push(...(await listFiles(dir, rel, depth + 1)));
    else if (stat.isFile()) out.push(rel);
    if (out.length > MAX_OUTPUT_FILES) break;
  }
  return out;
}

/** graphile-worker's log lines into the service's logger (its own go to the console). */
export function graphileLogger(log: Logger): GraphileLogger {
  return new GraphileLogger(() => (level, message, meta) => {
    const pinoLevel = level === 'error' ? 'error' : level === 'warning' ? 'warn' : 'debug';
    log[pinoLevel]({ ...meta, component: 'graphile-worker' }, message);
  });
}
