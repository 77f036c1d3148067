import { constants, createWriteStream } from 'node:fs';
import { lstat, mkdir, open, readdir } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { DeploymentService } from './deployment.service';
import type { MediaService } from '../media/media.service';
import type { Job, JobOutput } from './job.entity';

/** Bounds on what a job may leave in its output directory. */
export const MAX_OUTPUT_FILES = 100;
const MAX_OUTPUT_DEPTH = 8;

/**
 * Inputs must still exist. Those not read in place (storage that is not this machine's disk, or
 * a cluster) are copied to their path, relative to the job's directory, before the program starts.
 */
export async function stageInputs(media: MediaService, job: Job, workDir: string): Promise<void> {
  if (!job.inputs.length) return;
  const assets = new Map((await media.byIds(job.inputs.map((i) => i.mediaId))).map((a) => [a.id, a]));
  for (const input of job.inputs) {
    const asset = assets.get(input.mediaId);
    if (!asset) throw new Error(`the input media ${input.mediaId} was deleted before the job started`);
    if (path.isAbsolute(input.path)) continue;
    const bytes = await media.read(asset);
    if (!bytes) throw new Error(`the input media ${input.mediaId} has no stored file`);
    const target = path.resolve(workDir, input.path);
    await mkdir(path.dirname(target), { recursive: true });
    await pipeline(bytes, createWriteStream(target));
  }
}

/**
 * Where a job's processes run and write, one directory per job under JOBS_DIR: on the worker's
 * host, and for a cluster on a file system the compute nodes share.
 */
export function workDirOf(jobsDir: string, jobId: string): string {
  return path.join(jobsDir, jobId);
}

/**
 * Every regular file the program wrote, stored as media of the job's owner. Symlinks and files
 * with other links are refused (opened without following links, checked on the open file), so
 * a job cannot publish files from elsewhere on the host.
 */
export async function storeOutputs(
  media: MediaService,
  deployments: Pick<DeploymentService, 'byIds'>,
  job: Job,
  outputDir: string,
): Promise<JobOutput['files']> {
  const files = await listFiles(outputDir);
  if (files.length > MAX_OUTPUT_FILES)
    throw new Error(
      `the program wrote more than ${MAX_OUTPUT_FILES} files; at most ${MAX_OUTPUT_FILES} are kept`,
    );
  if (!files.length) return [];
  const deployment = (await deployments.byIds([job.deployment.id]))[0];
  // The deployment's target_asset_id names the first output its jobs kept; a retry of a job
  // that kept one gets ids of its own.
  const targetId =
    deployment && !(await media.idTaken(deployment.targetAssetId)) ? deployment.targetAssetId : undefined;
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
      const asset = await media.storeJobOutput(
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
        mediaKey: media.keyOf(asset),
        contentType: asset.contentType,
        size: asset.size,
      });
    } catch (err) {
      await handle.close().catch(() => undefined);
      throw new Error(`could not keep the output ${name}: ${(err as Error).message}`, { cause: err });
    }
  }
  return stored;
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
