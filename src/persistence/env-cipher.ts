import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Env values at rest: each stored env list is sealed with AES-256-GCM under the store's env key,
 * so a copied database or backup shows neither names nor values. Sealed text is
 * `enc:v1:<base64 of nonce, tag, ciphertext>`; a plaintext list (JSON, written before) never
 * starts that way.
 */
export interface EnvCipher {
  seal(plaintext: string): string;
  /** Throws when the text was sealed under another key, or altered. */
  open(stored: string): string;
}

const PREFIX = 'enc:v1:';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
export const ENV_KEY_BYTES = 32;
/** Binds a sealed value to what it is: the same key sealing something else cannot stand in. */
const AAD = Buffer.from('slipway env v1');

export const isSealed = (stored: string): boolean => stored.startsWith(PREFIX);

export function envCipher(key: Buffer): EnvCipher {
  if (key.length !== ENV_KEY_BYTES) throw new TypeError(`an env key is ${ENV_KEY_BYTES} bytes`);
  return {
    seal(plaintext) {
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, nonce).setAAD(AAD);
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return PREFIX + Buffer.concat([nonce, cipher.getAuthTag(), body]).toString('base64');
    },
    open(stored) {
      if (!isSealed(stored)) throw new Error('not a sealed env value');
      const raw = Buffer.from(stored.slice(PREFIX.length), 'base64');
      if (raw.length < NONCE_BYTES + TAG_BYTES) throw new Error('sealed env value is truncated');
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, NONCE_BYTES))
        .setAAD(AAD)
        .setAuthTag(raw.subarray(NONCE_BYTES, NONCE_BYTES + TAG_BYTES));
      const body = raw.subarray(NONCE_BYTES + TAG_BYTES);
      return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
    },
  };
}
