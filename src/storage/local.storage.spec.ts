import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { LocalStorage } from './local.storage';

let dir: string;
let storage: LocalStorage;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'local-storage-'));
  storage = new LocalStorage(dir);
  await storage.init();
});
afterEach(() => rm(dir, { recursive: true, force: true }));

describe('LocalStorage.write (writev on the file, no WriteStream)', () => {
  it('writes every byte in order, past the queue that pauses the stream', async () => {
    // 20 MiB in uneven chunks, produced faster than the disk takes them: the queue (8 MiB)
    // fills, the stream is paused and resumed, writes carry many chunks each.
    const chunks = Array.from({ length: 400 }, (_, i) => randomBytes(1 + ((i * 104_729) % 100_000)));
    await storage.write('a.bin', Readable.from(chunks));
    expect((await readFile(path.join(dir, 'a.bin'))).equals(Buffer.concat(chunks))).toBe(true);
  });

  it('writes an empty stream as an empty file', async () => {
    await storage.write('empty.bin', Readable.from([]));
    expect((await readFile(path.join(dir, 'empty.bin'))).length).toBe(0);
  });

  it('removes the partial file when the stream fails midway, and rejects with its error', async () => {
    const body = new PassThrough();
    const written = storage.write('cut.bin', body);
    body.write(randomBytes(3 * 1024 * 1024));
    // Failing once the file holds bytes.
    for (;;) {
      const size = (await readFile(path.join(dir, 'cut.bin')).catch(() => Buffer.alloc(0))).length;
      if (size > 0) break;
      await new Promise((r) => setImmediate(r));
    }
    body.destroy(new Error('client went away'));
    await expect(written).rejects.toThrow('client went away');
    expect(await readdir(dir)).toEqual([]);
  });

  it('rejects a stream that failed or closed before the write began, leaving nothing', async () => {
    const failed = new PassThrough();
    failed.on('error', () => undefined);
    failed.destroy(new Error('gone early'));
    await expect(storage.write('early.bin', failed)).rejects.toThrow('gone early');
    const closed = new PassThrough();
    closed.destroy();
    await expect(storage.write('closed.bin', closed)).rejects.toThrow();
    expect(await readdir(dir)).toEqual([]);
  });

  it('never overwrites or removes an existing file of the same key', async () => {
    await writeFile(path.join(dir, 'taken.bin'), 'first');
    await expect(storage.write('taken.bin', Readable.from([Buffer.from('second')]))).rejects.toMatchObject({
      code: 'EEXIST',
    });
    expect(await readFile(path.join(dir, 'taken.bin'), 'utf8')).toBe('first');
  });
});
