import { hash, randomBytes } from 'node:crypto';

/** A fresh API key issued by Slipway: `slw_` and 32 random bytes (256 bits), base64url. */
export function newApiKey(): string {
  return `slw_${randomBytes(32).toString('base64url')}`;
}

/** What the store keeps of a key Slipway issued: its sha256, hex. The key itself is never stored. */
export function hashApiKey(key: string): string {
  return sha256(key).toString('hex');
}

/** One-shot: no Hash object per call, which a check on every request would pay. */
export function sha256(text: string): Buffer {
  return hash('sha256', text, 'buffer');
}
