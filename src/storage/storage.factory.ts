import path from 'node:path';
import type { Config } from '../config';
import type { Logger } from '../common/logger';
import { LocalStorage } from './local.storage';
import type { Storage } from './storage.port';

/** The storage adapter the configuration names. */
export async function createStorage(config: Config, log?: Logger): Promise<Storage> {
  if (config.storage === 's3') {
    // Loaded only when chosen: the AWS SDK alone is about 20 MiB of resident memory.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { S3Storage } = require('./s3.storage') as typeof import('./s3.storage');
    return new S3Storage(
      { bucket: config.s3Bucket!, endpoint: config.s3Endpoint, region: config.s3Region },
      log,
    );
  }
  const local = new LocalStorage(path.join(config.dataDir, 'media'));
  await local.init();
  return local;
}
