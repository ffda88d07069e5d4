import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { HashQueue } from './hash-queue.js';

/**
 * Share-link passwords, stored only as `scrypt$N=<n>,r=<r>,p=<p>$<salt hex>$<hash hex>`. The
 * parameters travel with the hash, so raising them later leaves existing links verifiable.
 */
const PARAMS = { N: 2 ** 15, r: 8, p: 1 };
const SALT_BYTES = 16;
const KEY_BYTES = 32;

/**
 * scrypt runs on libuv's thread pool (4 threads by default), which DNS lookups, file I/O and zlib
 * share: a burst of hashes would queue everyone else's work behind seconds of hashing (an app's
 * egress DNS lookups timed out). At most two hashes use the pool at once; the rest wait in a
 * queue that is fair between users and bounded (429 when full), so one tenant's burst neither
 * stalls another's check nor waits for minutes.
 */
const queue = new HashQueue();

/** Share passwords are typed by people; the cap keeps one request from hashing megabytes. */
export const MAX_PASSWORD_LENGTH = 1024;

/** `user` is whose turn in the hashing queue this takes: the owner of the link. */
export async function hashPassword(password: string, user: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const hash = await derive(password, salt, KEY_BYTES, PARAMS, user);
  const params = `N=${PARAMS.N},r=${PARAMS.r},p=${PARAMS.p}`;
  return `scrypt$${params}$${salt.toString('hex')}$${hash.toString('hex')}`;
}

/** Constant-time comparison of the derived key; a malformed stored hash is an error, not a "no". */
export async function verifyPassword(
  password: string,
  stored: string,
  user: string,
): Promise<boolean> {
  const parsed = parseStored(stored);
  const actual = await derive(password, parsed.salt, parsed.hash.length, parsed.params, user);
  return timingSafeEqual(actual, parsed.hash);
}

interface Params {
  N: number;
  r: number;
  p: number;
}

function parseStored(stored: string): { params: Params; salt: Buffer; hash: Buffer } {
  const match = /^scrypt\$N=(\d+),r=(\d+),p=(\d+)\$([0-9a-f]{16,})\$([0-9a-f]{32,})$/.exec(stored);
  if (!match) throw new Error('stored share-link password hash is malformed');
  const [, n, r, p, salt, hash] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  const params = { N: Number(n), r: Number(r), p: Number(p) };
  // A damaged row must not make one request allocate gigabytes.
  const sane =
    Number.isInteger(Math.log2(params.N)) &&
    params.N >= 2 ** 10 &&
    params.N <= 2 ** 20 &&
    params.r >= 1 &&
    params.r <= 32 &&
    params.p >= 1 &&
    params.p <= 16;
  if (!sane) throw new Error('stored share-link password hash has out-of-range scrypt parameters');
  return { params, salt: Buffer.from(salt, 'hex'), hash: Buffer.from(hash, 'hex') };
}

function derive(
  password: string,
  salt: Buffer,
  length: number,
  params: Params,
  user: string,
): Promise<Buffer> {
  // scrypt needs 128·N·r bytes; node's default cap (32 MiB) is exactly N=2^15, r=8: leave room.
  const options: ScryptOptions = { ...params, maxmem: 256 * params.N * params.r + 1024 * 1024 };
  const run = (): Promise<Buffer> =>
    new Promise((resolve, reject) => {
      scrypt(password.normalize('NFC'), salt, length, options, (err, key) =>
        err ? reject(err) : resolve(key),
      );
    });
  return queue.run(user, run);
}
