import {
  DeleteObjectCommand,
  GetObjectCommand,
  NoSuchKey,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { Readable } from 'node:stream';
import { AppError } from '../common/errors';
import type { Logger } from '../common/logger';
import type { ByteRange, Storage } from './storage.port';
import { isOutOfSpace, isTooLargeForStore, StoreFull } from './storage.space';

export interface S3StorageOptions {
  bucket: string;
  endpoint?: string;
  region?: string;
  /** Static credentials (tests); otherwise the AWS default chain. */
  credentials?: S3ClientConfig['credentials'];
}

/**
 * S3-compatible object storage. Objects live under `media/<key>`, so a bucket or CDN put in
 * front of it as `CDN_URL` serves them at the same `{cdn_url}/media/<key>` URLs.
 */
export class S3Storage implements Storage {
  readonly kind = 's3';
  private readonly client: S3Client;

  constructor(
    private readonly opts: S3StorageOptions,
    private readonly log?: Logger,
  ) {
    this.client = new S3Client({
      endpoint: opts.endpoint,
      region: opts.region ?? 'us-east-1',
      // Custom endpoints (MinIO, Ceph, test servers) rarely support virtual-host addressing.
      forcePathStyle: Boolean(opts.endpoint),
      credentials: opts.credentials,
    });
  }

  private objectKey(key: string): string {
    return `media/${key}`;
  }

  localPath(): null {
    return null;
  }

  async freeBytes(): Promise<null> {
    return null;
  }

  async write(key: string, body: Readable, contentType: string): Promise<void> {
    // Multipart upload in 8 MiB parts, at most 2 in flight: memory stays bounded whatever the size.
    const upload = new Upload({
      client: this.client,
      params: {
        Bucket: this.opts.bucket,
        Key: this.objectKey(key),
        Body: body,
        ContentType: contentType,
        CacheControl: 'public, max-age=31536000, immutable',
      },
      queueSize: 2,
      partSize: 8 * 1024 * 1024,
      // A failed upload aborts its multipart upload, so no parts linger in the bucket.
      leavePartsOnError: false,
    });
    // lib-storage stops reading a failed body but does not always reject on its own.
    const failed = new Promise<never>((_, reject) => body.once('error', reject));
    try {
      await Promise.race([upload.done(), failed]);
    } catch (err) {
      // An abort that fails leaves parts behind: the bucket's lifecycle rule removes them (docs/media.md).
      await upload.abort().catch((e) => this.log?.warn({ err: e, key }, 'S3 multipart upload not aborted'));
      await this.delete(key).catch(() => undefined);
      // A bucket quota or a full server: how much room is left is not S3's to say.
      if (isOutOfSpace(err)) throw new StoreFull('media', null);
      // 413 as over MAX_UPLOAD_BYTES: the same file will never fit, however much room is freed.
      if (isTooLargeForStore(err))
        throw new AppError('PAYLOAD_TOO_LARGE', 'the file is larger than the media store accepts');
      throw err;
    }
  }

  async read(key: string, range?: ByteRange): Promise<Readable | null> {
    try {
      const res = await this.client.send(
        new GetObjectCommand({
          Bucket: this.opts.bucket,
          Key: this.objectKey(key),
          Range: range ? `bytes=${range.start}-${range.end}` : undefined,
        }),
      );
      return res.Body as Readable;
    } catch (err) {
      if (err instanceof NoSuchKey || (err as { name?: string }).name === 'NoSuchKey') return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.opts.bucket, Key: this.objectKey(key) }));
  }
}
