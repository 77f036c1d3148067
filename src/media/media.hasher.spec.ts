import { createHash, randomBytes } from 'node:crypto';
import { StreamHash } from './media.hasher';

async function hashOf(chunks: Buffer[]): Promise<string> {
  const h = new StreamHash();
  for (const c of chunks) await new Promise<void>((then) => h.update(c, then));
  return h.digest();
}

const expected = (chunks: Buffer[]) => createHash('sha256').update(Buffer.concat(chunks)).digest('hex');

describe('StreamHash (SHA-256 on a worker thread)', () => {
  it('hashes nothing, one byte, and small chunks like node:crypto', async () => {
    expect(await hashOf([])).toBe(expected([]));
    expect(await hashOf([Buffer.from('a')])).toBe(expected([Buffer.from('a')]));
    const small = Array.from({ length: 100 }, (_, i) => randomBytes(i * 37));
    expect(await hashOf(small)).toBe(expected(small));
  });

  it('keeps the order of many batches and waits for a free buffer past the pool', async () => {
    // 24 MiB in 64 KiB chunks: more than the pool's buffers hold.
    const chunks = Array.from({ length: 384 }, () => randomBytes(64 * 1024));
    expect(await hashOf(chunks)).toBe(expected(chunks));
  });

  it('keeps concurrent hashes apart', async () => {
    const a = Array.from({ length: 200 }, () => randomBytes(100_000));
    const b = Array.from({ length: 200 }, () => randomBytes(90_000));
    expect(await Promise.all([hashOf(a), hashOf(b)])).toEqual([expected(a), expected(b)]);
  });

  it('forgets a dropped hash and gives its buffer back', async () => {
    for (let i = 0; i < 40; i++) {
      const h = new StreamHash();
      await new Promise<void>((then) => h.update(randomBytes(1024 * 1024 + 10), then));
      h.drop();
    }
    expect(await hashOf([Buffer.from('after')])).toBe(expected([Buffer.from('after')]));
  });
});
