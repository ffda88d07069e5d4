import { join } from 'node:path';
import type { Config } from '../config/schema.js';
import type { Log } from '../logging.js';
import { checkDatabaseFile, damaged } from './database-guard.js';
import { createMemoryStore } from './memory-store.js';
import { ensurePrivateDir, ensurePrivateFile } from './private-files.js';
import { openSqliteStore } from './sqlite-store.js';
import type { Store } from './store.js';

export interface OpenStoreOptions {
  backend: Store['backend'];
  /** SQLite file; defaults to `<dataDir>/slipway.db`. Ignored by the other backends. */
  path?: string;
  dataDir: string;
  /** `store.envKey`: the env key given by the operator; else `<dataDir>/env.key`. */
  envKey?: string | undefined;
  /** The cluster and namespace of the configmap backend. */
  kubernetes?: Config['kubernetes'];
  log?: Log;
}

/**
 * Opens the configured backend; the one place that knows which implementations exist. Async:
 * the configmap backend loads what the API server holds before it answers. The Kubernetes client
 * is loaded only for that backend.
 */
export async function openStore(opts: OpenStoreOptions): Promise<Store> {
  if (opts.backend === 'memory') return createMemoryStore();
  if (opts.backend === 'configmap') {
    const { kubernetes } = opts;
    if (kubernetes === undefined) throw new TypeError('the configmap store needs `kubernetes`');
    const [{ loadKubeConfig }, { openConfigMapStore }] = await Promise.all([
      import('../cluster/kube-config.js'),
      import('./configmap/configmap-store.js'),
    ]);
    return openConfigMapStore({
      kubeConfig: loadKubeConfig({ kubernetes }),
      namespace: kubernetes.namespace,
      log: opts.log,
    });
  }
  const path = databasePath(opts);
  // The data dir holds the database, the env key, sources, built trees and the self-signed TLS
  // key (http/tls.ts): this user's only.
  ensurePrivateDir(opts.dataDir, opts.log);
  ensurePrivateFile(join(opts.dataDir, 'tls', 'auto-key.pem'), opts.log);
  checkDatabaseFile(path, opts.dataDir);
  const envKey = { configured: opts.envKey, dataDir: opts.dataDir, log: opts.log };
  try {
    return openSqliteStore(path, { envKey, log: opts.log });
  } catch (err) {
    throw damaged(path, err);
  }
}

/** The SQLite file of the sqlite backend: `store.path`, else `<dataDir>/slipway.db`. */
export function databasePath(opts: { path?: string | undefined; dataDir: string }): string {
  // An empty path (e.g. `SVC_STORE_PATH=`) means "not set", not "the current directory".
  return opts.path === undefined || opts.path === '' ? join(opts.dataDir, 'slipway.db') : opts.path;
}
