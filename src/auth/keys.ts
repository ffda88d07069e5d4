import { createHash, randomBytes } from 'node:crypto';

/** A fresh API key issued by Slipway: `slw_` and 32 random bytes (256 bits), base64url. */
export function newApiKey(): string {
  return `slw_${randomBytes(32).toString('base64url')}`;
}

/** What the store keeps of a key Slipway issued: its sha256, hex. The key itself is never stored. */
export function hashApiKey(key: string): string {
  return sha256(key).toString('hex');
}

export function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
