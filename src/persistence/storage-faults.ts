import { AppError } from '../errors.js';

/** The two places Slipway writes what it acknowledges. */
export type StorageName = 'database' | 'source store';

/**
 * An object store (`sources.backend: s3`) that could not take or give a blob: unreachable, timed
 * out, or refusing the call (a 5xx, missing bucket, denied credentials). `reason` is written to be
 * shown: codes and statuses only, never a URL, key material or signature.
 */
export class ObjectStoreFault extends Error {
  override name = 'ObjectStoreFault';
  readonly code = OBJECT_STORE_CODE;

  constructor(
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`the object store ${reason}`, options);
  }
}

/** How long a client is told to wait before trying a refused change again. */
export const STORAGE_RETRY_AFTER_S = 5;

/**
 * True for errors that mean "this store cannot write right now" (a full or read-only disk, an I/O
 * error), as opposed to a bug or bad input. SQLite reports them as SQLITE_FULL, SQLITE_IOERR_*,
 * SQLITE_READONLY_* or SQLITE_CANTOPEN; the file system as ENOSPC, EDQUOT, EROFS or EIO; an object
 * store as an ObjectStoreFault; the configmap store's API server as KUBE_UNAVAILABLE or
 * KUBE_TOO_LARGE.
 */
export function isStorageFault(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string') return false;
  if (code === OBJECT_STORE_CODE || KUBE_CODES.has(code)) return true;
  return FS_CODES.has(code) || SQLITE_PREFIXES.some((p) => code === p || code.startsWith(`${p}_`));
}

/**
 * `err` as the 503 it stands for when it is a storage fault that reached a caller unconverted (a
 * read, or a write outside the guarded store), else undefined. The store is named from the fault:
 * an object store's or the database's own code, else the data dir's file system.
 */
export function asStorageUnavailable(err: unknown): AppError | undefined {
  if (err instanceof AppError) return err.code === 'storage_unavailable' ? err : undefined;
  if (!isStorageFault(err)) return undefined;
  const code = (err as { code: string }).code;
  if (err instanceof ObjectStoreFault) return storageUnavailable('source store', err);
  if (code.startsWith('SQLITE_') || KUBE_CODES.has(code))
    return storageUnavailable('database', err);
  return storageUnavailable('data dir', err);
}

/** The 503 a change gets when `store` cannot write: which store, why, and when to try again. */
export function storageUnavailable(store: StorageName | 'data dir', cause?: unknown): AppError {
  return new AppError(503, 'storage_unavailable', `the ${store} cannot write: ${why(cause)}`, {
    store,
    retryAfterSeconds: STORAGE_RETRY_AFTER_S,
  });
}

const OBJECT_STORE_CODE = 'EOBJECTSTORE';

const FS_CODES = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EIO']);
/** The configmap store's faults (src/persistence/configmap/kube-fault.ts); `reason` is host-free. */
const KUBE_CODES = new Set(['KUBE_UNAVAILABLE', 'KUBE_TOO_LARGE']);
const SQLITE_PREFIXES = ['SQLITE_FULL', 'SQLITE_IOERR', 'SQLITE_READONLY', 'SQLITE_CANTOPEN'];

/** A short, path-free reason: the error code says it without naming host paths. */
function why(cause: unknown): string {
  if (cause instanceof ObjectStoreFault) return `${cause.message}; retry shortly`;
  const code = (cause as { code?: unknown } | undefined)?.code;
  const reason = (cause as { reason?: unknown } | undefined)?.reason;
  if (code === 'KUBE_TOO_LARGE' && typeof reason === 'string') return reason;
  if (code === 'KUBE_UNAVAILABLE' && typeof reason === 'string') return `${reason}; retry shortly`;
  if (code === 'ENOSPC' || code === 'SQLITE_FULL')
    return 'the disk is full; retry once space is freed';
  if (code === 'EDQUOT') return 'the disk quota is used up; retry once space is freed';
  if (code === 'EROFS' || (typeof code === 'string' && code.startsWith('SQLITE_READONLY'))) {
    return 'the file system is read-only; retry once it is writable again';
  }
  if (typeof code === 'string') return `an I/O error (${code}); retry shortly`;
  return 'its last write failed; retry shortly';
}
