import { AppError, httpStatusOf } from '../common/errors';
import { freeBytes, isOutOfSpace, isTooLargeForStore, StoreFull } from './storage.space';

const entityTooLarge = Object.assign(new Error('x'), {
  name: 'EntityTooLarge',
  $metadata: { httpStatusCode: 400 },
});

describe('isOutOfSpace', () => {
  it.each([
    ['ENOSPC', Object.assign(new Error('no space left on device'), { code: 'ENOSPC' })],
    ['EDQUOT', Object.assign(new Error('disk quota exceeded'), { code: 'EDQUOT' })],
    ['an S3 error by name', Object.assign(new Error('quota'), { name: 'QuotaExceeded' })],
    [
      'an S3 error by Code',
      Object.assign(new Error('x'), { name: 'S3ServiceException', Code: 'XMinioStorageFull' }),
    ],
    ['any 507', Object.assign(new Error('x'), { name: 'Unknown', $metadata: { httpStatusCode: 507 } })],
    [
      'one wrapped in another',
      new Error('outer', { cause: Object.assign(new Error('x'), { code: 'ENOSPC' }) }),
    ],
  ])('knows %s', (_what, err) => expect(isOutOfSpace(err)).toBe(true));

  it.each([
    ['EACCES', Object.assign(new Error('denied'), { code: 'EACCES' })],
    [
      'an S3 500',
      Object.assign(new Error('x'), { name: 'InternalError', $metadata: { httpStatusCode: 500 } }),
    ],
    ['nothing', undefined],
    ["an object over the store's largest (EntityTooLarge)", entityTooLarge],
  ])('refuses %s', (_what, err) => expect(isOutOfSpace(err)).toBe(false));
});

describe('isTooLargeForStore', () => {
  it('knows EntityTooLarge by name, by Code, or wrapped', () => {
    expect(isTooLargeForStore(entityTooLarge)).toBe(true);
    expect(isTooLargeForStore(Object.assign(new Error('x'), { Code: 'EntityTooLarge' }))).toBe(true);
    expect(isTooLargeForStore(new Error('outer', { cause: entityTooLarge }))).toBe(true);
  });

  it('refuses a full store and anything else', () => {
    expect(isTooLargeForStore(Object.assign(new Error('quota'), { name: 'QuotaExceeded' }))).toBe(false);
    expect(isTooLargeForStore(undefined)).toBe(false);
  });
});

describe('StoreFull', () => {
  it('is a 507 INSUFFICIENT_STORAGE naming the store', () => {
    const err = new StoreFull('jobs', 12);
    expect(err).toBeInstanceOf(AppError);
    expect(httpStatusOf(err.code)).toBe(507);
    expect(err.message).toMatch(/jobs directory \(JOBS_DIR\) is full/);
  });
});

describe('freeBytes', () => {
  it('reads the file system of a directory, and null for none', async () => {
    expect(await freeBytes('/')).toBeGreaterThan(0);
    expect(await freeBytes('/no/such/directory')).toBeNull();
  });
});
