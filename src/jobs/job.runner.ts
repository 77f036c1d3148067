import type { MikroORM } from '@mikro-orm/postgresql';
import { Logger as GraphileLogger, run, type Runner } from 'graphile-worker';
import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { lstat, mkdir, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Logger } from '../common/logger';
import type { DeploymentService } from '../deployments/deployment.service';
import { DISPATCH_TASK } from '../deployments/deployment.service';
import { CHANNELS, type EventBus } from '../events/event-bus';
import type { Executor, JobExit } from '../executors/executor.port';
import type { MediaAsset } from '../media/media.entity';
import type { MediaService } from '../media/media.service';
import { Job, WorkerInstance, type JobOutput } from './job.entity';
import { JobLog, type LogLine } from './job.log';
import type { JobEvent, JobService } from './job.service';

/** A worker whose heartbeat is older than this is gone; its jobs are reconciled. */
const STALE_WORKER_MS = 30_000;
const HEARTBEAT_MS = 5_000;
const RECONCILE_MS = 10_000;
/** Bounds on what a job may leave in its output directory. */
export const MAX_OUTPUT_FILES = 100;

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
  private readonly active = new Map<string, string>();
  private offCancel: (() => void) | null = null;
  private stopping = false;

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
    const now = new Date();
    await this.orm.em.fork().insert(WorkerInstance, {
      id: this.instanceId,
      host: this.host,
      pid: process.pid,
      startedAt: now,
      seenAt: now,
    });
    this.every(HEARTBEAT_MS, () =>
      this.orm.em.fork().nativeUpdate(WorkerInstance, { id: this.instanceId }, { seenAt: new Date() }),
    );
    // A cancel reaches the process running the job, whichever process took the request.
    this.offCancel = this.bus.on(CHANNELS.jobs, (payload) => {
      const e = payload as JobEvent;
      const externalId = e.status === 'canceled' ? this.active.get(e.jobId) : undefined;
      if (externalId) void this.executor.cancel(externalId);
    });
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

  /** Stops taking jobs, stops the running ones (they fail: the worker shut down), then leaves. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const t of this.timers) clearInterval(t);
    this.offCancel?.();
    await this.executor.close();
    await this.runner?.stop();
    await this.orm.em.fork().nativeDelete(WorkerInstance, { id: this.instanceId });
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
    const job = await this.jobs.transition(jobId, 'starting', { workerId: this.instanceId });
    if (!job) return;
    const workDir = this.deployments.workDirOf(job.id);
    const outputDir = path.join(workDir, 'output');
    const log = new JobLog({
      publish: (lines) => this.publishLines(job, lines),
      save: (tail) => this.jobs.saveLogTail(job.id, tail),
    });
    try {
      await mkdir(outputDir, { recursive: true });
      await this.stageInputs(job);
      const running = await this.executor.submit(
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
      this.active.set(job.id, running.externalId);
      if (!(await this.jobs.transition(job.id, 'running', { externalId: running.externalId })))
        await this.executor.cancel(running.externalId); // canceled while starting
      const exit = await running.finished;
      await log.flush();
      await this.finish(job, exit, log, outputDir);
    } catch (err) {
      await log.flush();
      this.log.warn({ err, jobId }, 'job failed before it could finish');
      await this.jobs.transition(job.id, 'failed', { error: (err as Error).message, logTail: log.tail() });
    } finally {
      this.active.delete(job.id);
      log.stop();
      await rm(workDir, { recursive: true, force: true });
    }
  }

  private async finish(job: Job, exit: JobExit, log: JobLog, outputDir: string): Promise<void> {
    const ended = { exitCode: exit.exitCode, logTail: log.tail() };
    if (exit.reason === 'canceled') {
      // Canceled by its owner: already `canceled`. Otherwise the worker itself is shutting down.
      const failed = await this.jobs.transition(job.id, 'failed', {
        ...ended,
        error: 'the worker shut down while the job ran; its processes were stopped',
      });
      if (!failed) await this.jobs.saveLogTail(job.id, ended.logTail);
      return;
    }
    if (exit.reason === 'lost') {
      await this.jobs.transition(job.id, 'failed', {
        ...ended,
        error: 'the executor lost track of the job; its processes were stopped',
      });
      return;
    }
    if (exit.reason === 'timeout') {
      await this.jobs.transition(job.id, 'failed', {
        ...ended,
        error: `timed out after ${job.timeoutSeconds} s; its processes were stopped`,
      });
      return;
    }
    if (exit.exitCode !== 0) {
      const how =
        exit.exitCode === null ? `was killed by ${exit.signal}` : `exited with code ${exit.exitCode}`;
      await this.jobs.transition(job.id, 'failed', { ...ended, error: `the program ${how}` });
      return;
    }
    const files = await this.storeOutputs(job, outputDir);
    const output: JobOutput = { files, result: log.result() };
    if (!(await this.jobs.transition(job.id, 'succeeded', { ...ended, output })))
      await this.media.discardAll(await this.media.byJobIds([job.id])); // canceled at the last moment
  }

  /** Every regular file the program wrote (no symlinks: they could point anywhere on the host). */
  private async storeOutputs(job: Job, outputDir: string): Promise<JobOutput['files']> {
    const files = await listFiles(outputDir);
    if (files.length > MAX_OUTPUT_FILES)
      throw new Error(`the program wrote ${files.length} files; at most ${MAX_OUTPUT_FILES} are kept`);
    const deployment = (await this.deployments.byIds([job.deployment.id]))[0];
    const stored: MediaAsset[] = [];
    try {
      for (const [i, name] of files.entries()) {
        stored.push(
          await this.media.storeJobOutput(
            { type: job.ownerType, id: job.ownerId },
            {
              stream: createReadStream(path.join(outputDir, name)),
              filename: name,
              jobId: job.id,
              id: i === 0 ? deployment?.targetAssetId : undefined,
            },
          ),
        );
      }
    } catch (err) {
      await this.media.discardAll(stored);
      throw new Error(`could not keep the output ${files[stored.length]}: ${(err as Error).message}`);
    }
    return stored.map((a) => ({
      mediaId: a.id,
      name: a.imageName,
      mediaKey: this.media.keyOf(a),
      contentType: a.contentType,
      size: a.size,
    }));
  }

  /** Inputs must still exist; those not on this machine's disk are copied into the job's directory. */
  private async stageInputs(job: Job): Promise<void> {
    if (!job.inputs.length) return;
    const assets = new Map((await this.media.byIds(job.inputs.map((i) => i.mediaId))).map((a) => [a.id, a]));
    for (const input of job.inputs) {
      const asset = assets.get(input.mediaId);
      if (!asset) throw new Error(`the input media ${input.mediaId} was deleted before the job started`);
      if (this.media.localPathOf(asset) === input.path) continue;
      const bytes = await this.media.read(asset);
      if (!bytes) throw new Error(`the input media ${input.mediaId} has no stored file`);
      await mkdir(path.dirname(input.path), { recursive: true });
      await pipeline(bytes, createWriteStream(input.path));
    }
  }

  private async publishLines(job: Job, lines: LogLine[]): Promise<void> {
    const event: JobLogEvent = { jobId: job.id, ownerType: job.ownerType, ownerId: job.ownerId, lines };
    await this.orm.em.fork().execute('select pg_notify(?, ?)', [CHANNELS.jobLogs, JSON.stringify(event)]);
  }

  /**
   * Jobs left `starting` or `running` by a worker that is gone (its heartbeat stopped, or it was
   * an earlier process on this host that no longer exists) fail with a clear error. Their local
   * processes, if still alive, are stopped: their output can no longer be followed.
   */
  async reconcile(): Promise<void> {
    const em = this.orm.em.fork();
    const workers = await em.find(WorkerInstance, {});
    const stale = Date.now() - STALE_WORKER_MS;
    const dead = new Set(
      workers
        .filter(
          (w) =>
            w.id !== this.instanceId &&
            (w.seenAt.getTime() < stale || (w.host === this.host && !processAlive(w.pid))),
        )
        .map((w) => w.id),
    );
    const known = new Set(workers.map((w) => w.id));
    const orphans = await em.find(Job, { status: { $in: ['starting', 'running'] } });
    for (const job of orphans) {
      if (job.workerId && known.has(job.workerId) && !dead.has(job.workerId)) continue;
      const worker = workers.find((w) => w.id === job.workerId);
      const here = !worker || worker.host === this.host;
      const stopped = here && job.externalId ? await this.executor.stopOrphan(job.id, job.externalId) : false;
      await this.jobs.transition(job.id, 'failed', {
        error:
          `the worker running this job stopped (crash or restart) before it finished` +
          (stopped ? '; its leftover processes were stopped' : ''),
      });
      this.log.warn({ jobId: job.id, worker: job.workerId }, 'reconciled a job of a lost worker');
    }
    if (dead.size) await em.nativeDelete(WorkerInstance, { id: { $in: [...dead] } });
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

/** Regular files below `dir`, as sorted relative paths; symlinks and other kinds are skipped. */
async function listFiles(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const name of (await readdir(path.join(dir, prefix)).catch(() => [] as string[])).sort()) {
    const rel = path.join(prefix, name);
    const stat = await lstat(path.join(dir, rel));
    if (stat.isDirectory()) out.push(...(await listFiles(dir, rel)));
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
