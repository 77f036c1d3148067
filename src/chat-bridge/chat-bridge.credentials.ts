import { createHash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { AppError } from '../common/errors';

/** scrypt cost: about 16 MiB and tens of milliseconds per hash. */
const SCRYPT = { N: 16384, r: 8, p: 1, keylen: 32 };

function scryptAsync(password: string, salt: Buffer, N: number, r: number, p: number, keylen: number) {
  return new Promise<Buffer>((resolve, reject) =>
    scrypt(password, salt, keylen, { N, r, p, maxmem: 256 * N * r }, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

/** `scrypt$N$r$p$<salt>$<hash>` (base64), so the cost can change without breaking old hashes. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const { N, r, p, keylen } = SCRYPT;
  const hash = await scryptAsync(password, salt, N, r, p, keylen);
  return ['scrypt', N, r, p, salt.toString('base64'), hash.toString('base64')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, N, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt') return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await scryptAsync(
    password,
    Buffer.from(salt, 'base64'),
    Number(N),
    Number(r),
    Number(p),
    expected.length,
  );
  return timingSafeEqual(actual, expected);
}

/** API keys are 256 random bits, so a plain SHA-256 is enough to store them. */
export function newApiKey(): string {
  return randomBytes(32).toString('base64url');
}

export function hashBridgeApiKey(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/** The longest Matrix user id, `@localpart:server`, is 255 characters. */
const MAX_USER_ID = 255;

/**
 * Matrix localpart rules for new accounts (spec "User identifiers"): lowercase a-z, 0-9 and
 * `. _ = - /`; Synapse also refuses a leading `_` (reserved for application services).
 */
export function validateUsername(username: string, serverName: string | undefined): string {
  const max = MAX_USER_ID - 2 - (serverName?.length ?? 0);
  let problem: string | undefined;
  if (!username) problem = 'is required';
  else if (/[A-Z]/.test(username)) problem = 'must be lowercase';
  else if (!/^[a-z0-9._=\-/]+$/.test(username))
    problem = 'may contain only a-z, 0-9 and the characters . _ = - /';
  else if (username.startsWith('_')) problem = 'must not start with _';
  else if (username.length > max) problem = `must be at most ${max} characters`;
  if (problem) throw AppError.validation({ username: problem });
  return username;
}

export const PASSWORD_MIN = 10;
export const PASSWORD_MAX = 512;

/**
 * At least 10 characters (at most 512, Synapse's bound) from at least two of: lowercase letters,
 * uppercase letters, digits, other characters; not containing the username; no NUL.
 */
export function validatePassword(password: string, username: string): string {
  const classes = [/[a-z]/, /[A-Z]/, /[0-9]/, /[^a-zA-Z0-9]/].filter((re) => re.test(password)).length;
  let problem: string | undefined;
  if (password.length < PASSWORD_MIN) problem = `must be at least ${PASSWORD_MIN} characters`;
  else if (password.length > PASSWORD_MAX) problem = `must be at most ${PASSWORD_MAX} characters`;
  else if (password.includes('\0')) problem = 'must not contain NUL characters';
  else if (classes < 2)
    problem = 'must mix at least two of: lowercase letters, uppercase letters, digits, other characters';
  else if (username && password.toLowerCase().includes(username.toLowerCase()))
    problem = 'must not contain the username';
  if (problem) throw AppError.validation({ password: problem });
  return password;
}
