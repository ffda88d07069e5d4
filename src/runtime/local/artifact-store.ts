import { createHash, randomBytes } from 'node:crypto';
import {
  createReadStream,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  type ReadStream,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ByteCap } from '../../sources/byte-cap.js';

/**
 * Built trees (/app after install and build, packed by the agent), kept per release so a wake, a
 * crash restart or a rollback of a general-lane app unpacks instead of reinstalling. The bytes
 * come from a sandbox and are untrusted: stored as they came, size-capped while they stream in,
 * never parsed here, and only ever handed back to a sandbox of the same app and owner (see
 * artifactKey). Deleting the app deletes its trees: a new app of the same name starts bare.
 */
export interface ArtifactStore {
  has(key: string): boolean;
  /** A stream of the artifact (marking it recently used), or undefined when there is none. */
  open(key: string): { stream: ReadStream; size: number } | undefined;
  /** Streams `body` in; rejects, keeping nothing, past `maxBytes` or on a broken stream. */
  write(key: string, body: Readable): Promise<void>;
  remove(key: string): void;
  /** Removes every artifact of the app (it was deleted). */
  removeApp(appId: string): void;
}

export interface ArtifactLimits {
  /** One artifact's cap: a bigger upload is refused as it streams. */
  maxBytes: number;
  /** All artifacts together: the least recently used go first past it. */
  totalBytes: number;
}

/** `<app>.<sha256 hex>`: the app's name first, so that its artifacts can go with it. */
const KEY = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.[0-9a-f]{64}$/;
/** Trees kept before keys named their app and owner: no key matches them any more. */
const UNOWNED = /^[0-9a-f]{64}\.tar\.gz$/;

/**
 * The content address of a built tree: the app and its owner (an artifact is the sandbox's own
 * work, so it is never shared across apps, even for identical sources, nor handed to whoever owns
 * the name next), the source's hash (which covers its lockfile and manifests), the template, the
 * env the build saw (a bundle bakes it in) and the toolchain and index it was installed with.
 */
export function artifactKey(parts: {
  appId: string;
  ownerId: string;
  sourceHash: string;
  template: string;
  /** runtime.build: another command builds another tree from the same source. */
  build?: string | undefined;
  env: { name: string; value: string }[];
  toolchain: string;
}): string {
  const { appId, ownerId, sourceHash, template, env, toolchain } = parts;
  const build = parts.build === undefined ? [] : [parts.build];
  const input = JSON.stringify([appId, ownerId, sourceHash, template, ...build, env, toolchain]);
  return `${appId}.${createHash('sha256').update(input).digest('hex')}`;
}

export function isArtifactKey(key: string): boolean {
  return KEY.test(key);
}

export function openArtifactStore(dir: string, limits: ArtifactLimits): ArtifactStore {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const name of readdirSync(dir)) {
    if (UNOWNED.test(name)) rmSync(join(dir, name), { force: true });
  }
  const file = (key: string) => {
    if (!KEY.test(key)) throw new Error(`not an artifact key: ${key}`);
    return join(dir, `${key}.tar.gz`);
  };
  const sizeOf = (key: string) => {
    try {
      return statSync(file(key)).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  };
  return {
    has: (key) => sizeOf(key) !== undefined,
    open(key) {
      const size = sizeOf(key);
      if (size === undefined) return undefined;
      // mtime is the LRU clock: eviction takes the oldest first. Past every other artifact's, so
      // the order holds whatever the clock's and the file system's granularity.
      const used = new Date(Math.max(Date.now(), newest(dir) + 1));
      utimesSync(file(key), used, used);
      return { stream: createReadStream(file(key)), size };
    },
    async write(key, body) {
      const target = file(key);
      const temp = join(dir, `.${randomBytes(8).toString('hex')}.part`);
      // Opened before anything streams: a stream left to open its file itself creates it even
      // after an early refusal, and then after the cleanup below.
      const handle = await open(temp, 'w', 0o600);
      try {
        await pipeline(
          body,
          new ByteCap(
            limits.maxBytes,
            () => new Error(`artifact is larger than ${limits.maxBytes} bytes`),
          ),
          handle.createWriteStream(),
        );
        renameSync(temp, target);
      } finally {
        rmSync(temp, { force: true });
      }
      evict(dir, limits.totalBytes, target);
    },
    remove: (key) => rmSync(file(key), { force: true }),
    removeApp(appId) {
      for (const name of readdirSync(dir)) {
        if (name.startsWith(`${appId}.`)) rmSync(join(dir, name), { force: true });
      }
    },
  };
}

function newest(dir: string): number {
  return Math.max(0, ...artifacts(dir).map((a) => a.used));
}

function artifacts(dir: string): { path: string; size: number; used: number }[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.tar.gz'))
    .map((name) => {
      const path = join(dir, name);
      const stat = statSync(path);
      return { path, size: stat.size, used: stat.mtimeMs };
    });
}

/** Removes the least recently used artifacts until the rest fit, never the one just written. */
function evict(dir: string, totalBytes: number, keep: string): void {
  const entries = artifacts(dir).sort((a, b) => a.used - b.used);
  let total = entries.reduce((sum, e) => sum + e.size, 0);
  for (const entry of entries) {
    if (total <= totalBytes) break;
    if (entry.path === keep) continue;
    rmSync(entry.path, { force: true });
    total -= entry.size;
  }
}
