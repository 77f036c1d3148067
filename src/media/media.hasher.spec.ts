import { createHash, randomBytes } from 'node:crypto';
import { StreamHash } from './media.hasher';

async function hashOf(chunks: Buffer[]): Promise<string> {
  const h = new StreamHash();
  for (const c of chunks)
    await new Promise<void>((then) => {
      if (h.update(c, then)) then();
    });
  return h.digest();
}

const expected = (chunks: Buffer[]) => createHash('sha256').update(Buffer.concat(chunks)).digest('hex');

describe('StreamHash (SHA-256 on a worker thread, fed through a shared ring)', () => {
  it('hashes nothing, one byte, and small chunks like node:crypto', async () => {
    expect(await hashOf([])).toBe(expected([]));
    expect(await hashOf([Buffer.from('a')])).toBe(expected([Buffer.from('a')]));
    const small = Array.from({ length: 100 }, (_, i) => randomBytes(i * 37));
    expect(await hashOf(small)).toBe(expected(small));
  });

  it('keeps the order of many records and waits for room past the ring', async () => {
    // 24 MiB in 64 KiB chunks: several times what the 4 MiB ring holds.
    const chunks = Array.from({ length: 384 }, () => randomBytes(64 * 1024));
    expect(await hashOf(chunks)).toBe(expected(chunks));
  });

  it('keeps concurrent hashes apart', async () => {
    const a = Array.from({ length: 200 }, () => randomBytes(100_000));
    const b = Array.from({ length: 200 }, () => randomBytes(90_000));
    expect(await Promise.all([hashOf(a), hashOf(b)])).toEqual([expected(a), expected(b)]);
  });

  it("hashes odd sizes across the ring's end many times over, and chunks larger than the ring", async () => {
    // Odd lengths put records at every alignment and split some at the ring's end (the 4 MiB
    // ring wraps many times); chunks of 16 and 20 MiB cannot fit at all and go in pieces.
    const odd = Array.from({ length: 1200 }, (_, i) => randomBytes(1 + ((i * 7919) % 65_537)));
    const sizes = [0, 1, 7, 8, 9, 16 * 1024 * 1024 - 9, 16 * 1024 * 1024, 16 * 1024 * 1024 + 1];
    const edges = sizes.map((n) => randomBytes(n));
    const huge = [randomBytes(20 * 1024 * 1024 + 3)];
    expect(await hashOf(odd)).toBe(expected(odd));
    expect(await hashOf(edges)).toBe(expected(edges));
    expect(await Promise.all([hashOf(huge), hashOf(odd)])).toEqual([expected(huge), expected(odd)]);
  });

  it('forgets a dropped hash, even one with bytes still in the ring', async () => {
    for (let i = 0; i < 40; i++) {
      const h = new StreamHash();
      await new Promise<void>((then) => {
        if (h.update(randomBytes(1024 * 1024 + 10), then)) then();
      });
      h.drop();
    }
    // Dropped while another upload fills the ring past its size: both go on.
    const big = Array.from({ length: 300 }, () => randomBytes(100_000));
    const dropped = new StreamHash();
    const filling = hashOf(big);
    await new Promise<void>((then) => {
      if (dropped.update(randomBytes(3 * 1024 * 1024), then)) then();
    });
    dropped.drop();
    await expect(dropped.digest()).rejects.toThrow();
    expect(await filling).toBe(expected(big));
    expect(await hashOf([Buffer.from('after')])).toBe(expected([Buffer.from('after')]));
  });
});
