import type { Readable } from 'node:stream';

/**
 * Where validated source tarballs live, by key `<app_id>.v<version>.<32 hex>` (spec §2). The
 * `served` backend keeps them under `<dataDir>/sources` and serves `/internal/sources/{key}.tar.gz`.
 */
export interface SourceStore {
  put(key: string, data: Buffer): Promise<void>;
  /** A stream of the blob, or undefined when there is none. */
  open(key: string): Readable | undefined;
  size(key: string): number | undefined;
  /** Best-effort: a missing blob is not an error. */
  remove(key: string): Promise<void>;
  ping(): boolean;
  /** Every stored blob with its last write time (ms since the epoch), for the orphan sweep. */
  list(): Promise<StoredBlob[]>;
}

export interface StoredBlob {
  key: string;
  modifiedAt: number;
  bytes: number;
}
