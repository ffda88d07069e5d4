import type { Readable } from 'node:stream';

/**
 * Where validated source tarballs live, by key `<app_id>.v<version>.<32 hex>` (spec §2). The
 * `served` backend keeps them under `<dataDir>/sources` and serves `/internal/sources/{key}.tar.gz`;
 * the `s3` backend keeps them in an object store and serves nothing (the agent pulls a pre-signed
 * URL from `presignGet`).
 */
export interface SourceStore {
  readonly backend: 'served' | 's3';
  put(key: string, data: Buffer): Promise<void>;
  /** A stream of the blob, or undefined when there is none. */
  open(key: string): Promise<Readable | undefined>;
  size(key: string): Promise<number | undefined>;
  /** The whole blob when it is at most `max` bytes; undefined for a larger or missing one. */
  readWhole(key: string, max: number): Promise<Buffer | undefined>;
  /** Best-effort: a missing blob is not an error. */
  remove(key: string): Promise<void>;
  /** Whether the store is usable, from what is known now: it never waits. */
  ping(): boolean;
  /**
   * Proves the store takes a write (StorageHealth's probe, synchronous): throws when it cannot.
   * An object store answers from its last background check, at most about a second old.
   */
  probe(): void;
  /** Every stored blob with its last write time (ms since the epoch), for the orphan sweep. */
  list(): Promise<StoredBlob[]>;
  /**
   * `s3` only: a GET URL for the blob that needs no credentials and expires soon
   * (`sources.s3.presignExpiry`), for an agent that cannot reach the control plane's store.
   */
  presignGet?(key: string): Promise<string>;
}

export interface StoredBlob {
  key: string;
  modifiedAt: number;
  bytes: number;
}
