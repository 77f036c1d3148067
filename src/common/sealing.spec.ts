import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from './logger';
import { loadSealingKey, SecretBox } from './sealing';

describe('SecretBox', () => {
  const box = new SecretBox(randomBytes(32));

  it('opens what it sealed, in the same context only', () => {
    const sealed = box.seal('platform token', 'row-1');
    expect(sealed).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(sealed).not.toContain('platform token');
    expect(box.open(sealed, 'row-1')).toBe('platform token');
    expect(() => box.open(sealed, 'row-2')).toThrow(/does not open/);
  });

  it('seals the same text differently each time and refuses tampering or another key', () => {
    const a = box.seal('same', 'c');
    expect(box.seal('same', 'c')).not.toBe(a);
    const parts = a.split('.');
    parts[3] = Buffer.from('other').toString('base64url');
    expect(() => box.open(parts.join('.'), 'c')).toThrow();
    expect(() => new SecretBox(randomBytes(32)).open(a, 'c')).toThrow(/BRIDGE_SECRET_KEY/);
    expect(() => box.open('plain text', 'c')).toThrow(/not a sealed value/);
  });
});

describe('loadSealingKey', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'bridge-key-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));
  const log = createLogger('silent');

  it('uses the configured key when set', async () => {
    const key = randomBytes(32);
    expect(await loadSealingKey({ dataDir: dir, sealingKey: key }, log)).toEqual(key);
  });

  it('otherwise generates a key under DATA_DIR once, readable by the owner only', async () => {
    const config = { dataDir: dir, sealingKey: undefined };
    const key = await loadSealingKey(config, log);
    expect(key).toHaveLength(32);
    const file = path.join(dir, 'chat-bridge', 'secret.key');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(Buffer.from((await readFile(file, 'utf8')).trim(), 'base64')).toEqual(key);
    expect(await loadSealingKey(config, log)).toEqual(key);
  });
});
