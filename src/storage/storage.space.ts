import { statfs } from 'node:fs/promises';
import { AppError } from '../common/errors';

/** The stores whose room the service watches: media files (local disk), and JOBS_DIR. */
export type StoreName = 'media' | 'jobs';

const WHAT: Record<StoreName, string> = {
  media: 'the media store',
  jobs: 'the jobs directory (JOBS_DIR)',
};

/**
 * A store with no room left: 507 INSUFFICIENT_STORAGE, not the request's fault nor a bug.
 * `freeBytes` is for the log (null: unknown, as for S3).
 */
export class StoreFull extends AppError {
  constructor(
    readonly store: StoreName,
    readonly freeBytes: number | null,
  ) {
    super('INSUFFICIENT_STORAGE', `${WHAT[store]} is full; try again once space is freed`);
  }
}

/** How a local file system says it is full (a quota counts too). */
const FULL_ERRNOS = new Set(['ENOSPC', 'EDQUOT']);
/** How S3-compatible stores say it: AWS, Ceph RGW quotas, MinIO (by error code). */
const FULL_S3_CODES = new Set([
  'QuotaExceeded',
  'InsufficientStorage',
  'XMinioStorageFull',
  'XMinioAdminBucketQuotaExceeded',
]);

type Failure = {
  code?: string;
  name?: string;
  Code?: string;
  $metadata?: { httpStatusCode?: number };
  cause?: unknown;
};

/** Whether an error, or one it wraps (at most 5 deep), says what `test` asks. */
function saysSo(err: unknown, test: (e: Failure) => boolean): boolean {
  for (let e = err as Failure | undefined, depth = 0; e && depth < 5; depth++, e = e.cause as Failure)
    if (test(e)) return true;
  return false;
}

/** Whether an error (or one it wraps) says the store has no room. */
export function isOutOfSpace(err: unknown): boolean {
  return saysSo(
    err,
    (e) =>
      FULL_ERRNOS.has(e.code ?? '') ||
      FULL_S3_CODES.has(e.Code ?? '') ||
      FULL_S3_CODES.has(e.name ?? '') ||
      e.$metadata?.httpStatusCode === 507,
  );
}

/**
 * Whether an S3-compatible store refused the object for its size (`EntityTooLarge`: over the
 * store's largest object, or a size policy of the bucket): the request's fault, not a full store.
 */
export function isTooLargeForStore(err: unknown): boolean {
  return saysSo(err, (e) => e.Code === 'EntityTooLarge' || e.name === 'EntityTooLarge');
}

/** Bytes the service may still write on the file system holding `dir`; null when unreadable. */
export async function freeBytes(dir: string): Promise<number | null> {
  try {
    const fs = await statfs(dir);
    return fs.bavail * fs.bsize;
  } catch {
    return null;
  }
}
