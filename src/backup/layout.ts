import { ENV_KEY_FILE } from '../persistence/env-key.js';
import { isArtifactKey } from '../runtime/local/artifact-store.js';
import { isSourceKey } from '../sources/keys.js';

/**
 * What a backup archive holds, by entry name: `manifest.json`, `slipway.db` (an online snapshot
 * of the database: apps, versions, users with their key hashes, apps' env values sealed with the
 * env key, share links, the audit trail), `env.key` (that key, when the data dir holds it rather
 * than `store.envKey`), `sources/<key>.tar.gz` (every source blob a version in it points to) and
 * `artifacts/<key>.tar.gz` (the built trees of its apps: a cache, rebuilt when missing).
 */
export const MANIFEST = 'manifest.json';
export const DATABASE = 'slipway.db';
export const ENV_KEY = ENV_KEY_FILE;
export const FORMAT = 'slipway-backup';
export const FORMAT_VERSION = 1;

export interface Manifest {
  format: typeof FORMAT;
  version: typeof FORMAT_VERSION;
  createdAt: string;
  /** `served`: the blobs are in the archive; `s3`: they stay in the bucket, not copied. */
  sourcesBackend: 'served' | 's3';
  sources: number;
  artifacts: number;
  /** Whether `env.key` is in the archive (without it, `store.envKey` opens the env values). */
  envKey: boolean;
  /** Source keys the snapshot points to whose blob was already gone when it was taken. */
  missingSources: string[];
}

/** Whether `name` is an entry a restore takes; anything else in an archive is refused. */
export function isArchiveEntry(name: string): boolean {
  if (name === MANIFEST || name === DATABASE || name === ENV_KEY) return true;
  const blob = /^(sources|artifacts)\/([^/]+)\.tar\.gz$/.exec(name);
  if (!blob) return false;
  const key = blob[2] ?? '';
  return blob[1] === 'sources' ? isSourceKey(key) : isArtifactKey(key);
}

export function parseManifest(text: string): Manifest {
  const manifest = JSON.parse(text) as Partial<Manifest>;
  if (manifest.format !== FORMAT || manifest.version !== FORMAT_VERSION) {
    throw new Error(
      `not a Slipway backup this version can restore (format ${String(manifest.format)} version ${String(manifest.version)})`,
    );
  }
  return manifest as Manifest;
}
