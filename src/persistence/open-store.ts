import { join } from 'node:path';
import { createMemoryStore } from './memory-store.js';
import { openSqliteStore } from './sqlite-store.js';
import type { Store } from './store.js';

export interface OpenStoreOptions {
  backend: 'sqlite' | 'memory';
  /** SQLite file; defaults to `<dataDir>/slipway.db`. Ignored by the memory backend. */
  path?: string;
  dataDir: string;
}

/** Opens the configured backend; the one place that knows which implementations exist. */
export function openStore(opts: OpenStoreOptions): Store {
  if (opts.backend === 'memory') return createMemoryStore();
  // An empty path (e.g. `SVC_STORE_PATH=`) means "not set", not "the current directory".
  const path =
    opts.path === undefined || opts.path === '' ? join(opts.dataDir, 'slipway.db') : opts.path;
  return openSqliteStore(path);
}
