import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from './logger';

/**
 * AES-256-GCM for the secrets the service must be able to read back (the chat bridge's platform
 * and Matrix tokens, owners' secrets for their jobs). Each value is bound to where it belongs
 * (`context`, the additional authenticated data), so a sealed value copied into another row does
 * not open.
 */
export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('the sealing key must be 32 bytes');
  }

  /** `v1.<iv>.<tag>.<ciphertext>`, base64url. */
  seal(plaintext: string, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(context));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', iv, cipher.getAuthTag(), ciphertext].map((p) => p.toString('base64url')).join('.');
  }

  open(sealed: string, context: string): string {
    const [version, iv, tag, ciphertext] = sealed.split('.');
    if (version !== 'v1' || ciphertext === undefined) throw new Error('not a sealed value');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    try {
      return Buffer.concat([
        decipher.update(Buffer.from(ciphertext, 'base64url')),
        decipher.final(),
      ]).toString('utf8');
    } catch {
      throw new Error('a sealed secret does not open: was SEALING_KEY (or BRIDGE_SECRET_KEY) changed?');
    }
  }
}

/** What the sealing key comes from (a subset of Config). */
export interface SealingKeySource {
  /** SEALING_KEY, or its older name BRIDGE_SECRET_KEY. */
  sealingKey: Buffer | undefined;
  dataDir: string;
}

/**
 * The service's sealing key: SEALING_KEY (or BRIDGE_SECRET_KEY), or else a key generated once under
 * DATA_DIR with 0600 permissions. The file keeps the path the chat bridge gave it first, so a
 * development install's sealed tokens still open. Callers decide whether a generated key will do
 * (the bridge's config refuses production without one; the secrets service does too).
 */
export async function loadSealingKey(source: SealingKeySource, log: Logger): Promise<Buffer> {
  if (source.sealingKey) return source.sealingKey;
  const dir = path.join(source.dataDir, 'chat-bridge');
  const file = path.join(dir, 'secret.key');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  try {
    const key = Buffer.from((await readFile(file, 'utf8')).trim(), 'base64');
    if (key.length !== 32) throw new Error(`${file} does not hold a 32-byte key`);
    return key;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const key = randomBytes(32);
  try {
    await writeFile(file, key.toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
  } catch (err) {
    // Another role of this install wrote it first: use that one.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return loadSealingKey(source, log);
    throw err;
  }
  await chmod(file, 0o600);
  log.warn({ file }, 'SEALING_KEY is unset: generated a key under DATA_DIR (set it in production)');
  return key;
}
