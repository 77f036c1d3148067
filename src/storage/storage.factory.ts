import path from 'node:path';
import type { Config } from '../config';
import type { Logger } from '../common/logger';
import { LocalStorage } from './local.storage';
import { S3Storage } from './s3.storage';
import type { Storage } from './storage.port';

/** The storage adapter the configuration names. */
export async function createStorage(config: Config, log?: Logger): Promise<Storage> {
  if (config.storage === 's3') {
    return new S3Storage(
      { bucket: config.s3Bucket!, endpoint: config.s3Endpoint, region: config.s3Region },
      log,
    );
  }
  const local = new LocalStorage(path.join(config.dataDir, 'media'));
  await local.init();
  return local;
}
