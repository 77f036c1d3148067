import { hashPassword, UNUSABLE_HASH, verifyPassword } from './password';

describe('password hashing', () => {
  it('verifies the right password and refuses others', async () => {
    const stored = await hashPassword('correct horse battery');
    expect(stored).toMatch(/^scrypt\$32768\$8\$1\$[\w-]{22}\$[\w-]{43}$/);
    await expect(verifyPassword('correct horse battery', stored)).resolves.toBe(true);
    await expect(verifyPassword('correct horse batterY', stored)).resolves.toBe(false);
  });

  it('salts every hash', async () => {
    expect(await hashPassword('same')).not.toBe(await hashPassword('same'));
  });

  it('refuses malformed hashes and the unusable hash', async () => {
    await expect(verifyPassword('x', 'plain')).resolves.toBe(false);
    await expect(verifyPassword('', UNUSABLE_HASH)).resolves.toBe(false);
  });
});
