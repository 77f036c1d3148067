import {
  hashBridgeApiKey,
  hashPassword,
  newApiKey,
  validatePassword,
  validateUsername,
  verifyPassword,
} from './chat-bridge.credentials';

describe('passwords', () => {
  it('hashes with scrypt and a salt, and verifies only the right password', async () => {
    const a = await hashPassword('Correct-horse-9');
    const b = await hashPassword('Correct-horse-9');
    expect(a).toMatch(/^scrypt\$16384\$8\$1\$[\w+/=]+\$[\w+/=]+$/);
    expect(a).not.toBe(b);
    expect(await verifyPassword('Correct-horse-9', a)).toBe(true);
    expect(await verifyPassword('correct-horse-9', a)).toBe(false);
    expect(await verifyPassword('Correct-horse-9', 'bcrypt$whatever')).toBe(false);
  });

  it.each([
    ['Correct-horse-9', undefined],
    ['longenough1', undefined],
    ['short-A1', 'at least 10'],
    ['onlylowercase', 'two of'],
    ['ONLYUPPERCASE', 'two of'],
    ['0123456789', 'two of'],
    ['nul\0-Password-1', 'NUL'],
    ['my-Alice-password', 'username'],
  ])('%j', (password, problem) => {
    const check = () => validatePassword(password, 'alice');
    if (problem) expect(check).toThrow(problem);
    else expect(check()).toBe(password);
  });
});

describe('usernames (Matrix localparts)', () => {
  it.each(['alice', 'a.b_c=d-e/f', '0day'])('accepts %j', (name) => {
    expect(validateUsername(name, 'example.org')).toBe(name);
  });

  it.each([
    ['', 'is required'],
    ['Alice', 'lowercase'],
    ['al ice', 'may contain only'],
    ['al:ice', 'may contain only'],
    ['élise', 'may contain only'],
    ['_alice', 'must not start with _'],
  ])('refuses %j', (name, problem) => {
    expect(() => validateUsername(name, 'example.org')).toThrow(problem);
  });

  it('keeps the whole user id within 255 characters', () => {
    const server = 'example.org';
    const max = 255 - '@:'.length - server.length;
    expect(validateUsername('a'.repeat(max), server)).toHaveLength(max);
    expect(() => validateUsername('a'.repeat(max + 1), server)).toThrow(`at most ${max}`);
  });
});

describe('API keys', () => {
  it('are 256 random bits, stored as SHA-256', () => {
    const key = newApiKey();
    expect(key).toMatch(/^[\w-]{43}$/);
    expect(newApiKey()).not.toBe(key);
    expect(hashBridgeApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
  });
});
