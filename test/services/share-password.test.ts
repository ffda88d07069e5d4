import { describe, expect, it } from 'vitest';
import { hashPassword, verifyPassword } from '../../src/services/share-password.js';

const USER = 'apikey-alice';

describe('share-link passwords: scrypt, salted, compared in constant time', () => {
  it('stores scrypt$<params>$<salt>$<hash>, never the password', async () => {
    const stored = await hashPassword('correct horse', USER);
    expect(stored).toMatch(/^scrypt\$N=32768,r=8,p=1\$[0-9a-f]{32}\$[0-9a-f]{64}$/);
    expect(stored).not.toContain('correct horse');
  });

  it('salts every hash: the same password hashes differently each time', async () => {
    const [a, b] = await Promise.all([hashPassword('same', USER), hashPassword('same', USER)]);
    expect(a).not.toBe(b);
    expect(await verifyPassword('same', a, USER)).toBe(true);
    expect(await verifyPassword('same', b, USER)).toBe(true);
  });

  it('accepts only the right password', async () => {
    const stored = await hashPassword('s3cret', USER);
    expect(await verifyPassword('s3cret', stored, USER)).toBe(true);
    for (const wrong of ['s3cre', 's3cret ', 'S3cret', '']) {
      expect(await verifyPassword(wrong, stored, USER)).toBe(false);
    }
  });

  it('reads the parameters from the stored hash, so older settings still verify', async () => {
    const stored = await hashPassword('pw', USER);
    const [, , salt, hash] = stored.split('$');
    // Same salt and key under other parameters: a different derived key, so no match.
    expect(await verifyPassword('pw', `scrypt$N=16384,r=8,p=1$${salt}$${hash}`, USER)).toBe(false);
  });

  it('refuses a malformed or absurd stored hash instead of answering "wrong password"', async () => {
    await expect(verifyPassword('pw', 'plain:pw', USER)).rejects.toThrow(/malformed/);
    const huge = `scrypt$N=1073741824,r=8,p=1$${'00'.repeat(16)}$${'00'.repeat(32)}`;
    await expect(verifyPassword('pw', huge, USER)).rejects.toThrow(/out-of-range/);
  });

  it('normalizes Unicode, so a composed and a decomposed é are the same password', async () => {
    const stored = await hashPassword('caf\u00e9', USER);
    expect(await verifyPassword('cafe\u0301', stored, USER)).toBe(true);
  });
});
