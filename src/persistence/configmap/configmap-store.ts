import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { AppError } from '../../errors.js';
import { createMemoryMirror } from '../memory-store.js';
import type { Store } from '../store.js';
import {
  applyToMirror,
  assertFits,
  dataOf,
  objectKey,
  type ObjectKey,
} from './configmap-objects.js';
import { ConfigMapWatch, listOurs } from './configmap-watch.js';
import { ConfigMapWriter } from './configmap-writer.js';
import { unavailable } from './kube-fault.js';
import { remoteChanges } from './remote-changes.js';
import type { Log } from '../../logging.js';

export interface ConfigMapStoreOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  log?: Log;
  /** Audit events kept in memory (the configmap backend does not persist the trail). */
  maxAuditEvents?: number;
  /** A Kubernetes call that has not answered by then counts as failed. */
  requestTimeoutMs?: number;
}

/** Audit events the store keeps by default: the audit route's maximum page ten times over. */
export const DEFAULT_MAX_AUDIT_EVENTS = 10_000;

/**
 * The `configmap` backend: apps (with their versions), users, departments and meta in ConfigMaps
 * of the namespace, labelled `app.kubernetes.io/managed-by=slipway`. Opening lists them into an
 * in-memory mirror (the memory store, so the constraints are the same); reads are served from it.
 * A write changes the mirror at once and queues the objects it touched for the API server
 * (ConfigMapWriter); `flush()` waits until they landed. While the API does not take writes, new
 * changes are refused with a storage fault (503 storage_unavailable) and `ping()` is false.
 * A watch brings in what other replicas change. Share links are unavailable (503, as the spec
 * says for this backend) and the audit trail lives in memory only, bounded.
 */
export async function openConfigMapStore(opts: ConfigMapStoreOptions): Promise<Store> {
  const log: Log = opts.log ?? (() => undefined);
  const api = opts.kubeConfig.makeApiClient(CoreV1Api);
  const mirror = createMemoryMirror({
    maxAuditEvents: opts.maxAuditEvents ?? DEFAULT_MAX_AUDIT_EVENTS,
  });
  const tables = mirror.tables;
  const inner = mirror.store;
  const writer = new ConfigMapWriter({
    api,
    namespace: opts.namespace,
    dataOf: (key) => dataOf(tables(), key),
    adopt: (key, cm) => applyToMirror(tables(), key, cm),
    log,
    requestTimeoutMs: opts.requestTimeoutMs,
  });

  const remote = remoteChanges(tables, writer, log);

  let listed: Awaited<ReturnType<typeof listOurs>>;
  try {
    listed = await listOurs(api, opts.namespace, opts.requestTimeoutMs);
  } catch (err) {
    throw new Error(
      `configmap store: cannot list the ConfigMaps in namespace ${opts.namespace}: ` +
        unavailable(err).reason,
    );
  }
  remote.resync(listed.items);
  const watch = new ConfigMapWatch({
    kubeConfig: opts.kubeConfig,
    api,
    namespace: opts.namespace,
    log,
    onEvent: (cm, deleted) => remote.event(cm, deleted),
    onResync: (items) => remote.resync(items),
  });
  watch.start(listed.resourceVersion);

  // The objects the writes of the running (outermost) call touched; queued when it commits.
  const touched = new Set<ObjectKey>();
  let depth = 0;
  /**
   * Every write: refused while the API fails; applied to the mirror atomically (a snapshot is
   * restored when it throws, or when an object it touched would not fit in a ConfigMap); then its
   * objects are queued. Nested calls (inside a transaction) only collect their objects.
   */
  const write = <T>(keys: readonly ObjectKey[], run: () => T): T => {
    const fault = writer.down;
    if (fault) throw fault;
    for (const key of keys) touched.add(key);
    if (depth > 0) return run();
    depth++;
    try {
      const result = inner.transaction(() => {
        const value = run();
        for (const key of touched) assertFits(tables(), key);
        return value;
      });
      writer.mark(touched);
      return result;
    } finally {
      depth--;
      touched.clear();
    }
  };
  const app = (id: string): ObjectKey => objectKey('app', id);
  const user = (id: string): ObjectKey => objectKey('user', id);
  const department = (id: string): ObjectKey => objectKey('department', id);

  return {
    backend: 'configmap',

    ping: () => inner.ping() && writer.down === undefined,
    flush: () => writer.flush(),
    close() {
      if (!inner.ping()) return;
      watch.stop();
      const lost = writer.close();
      if (lost.length > 0) {
        log('error', 'configmap store closed before these writes landed', { objects: lost });
      }
      inner.close();
    },
    transaction: (fn) => write([], () => inner.transaction(fn)),

    getApp: (id) => inner.getApp(id),
    listApps: (query) => inner.listApps(query),
    getAppSummary: (id) => inner.getAppSummary(id),
    listAppSummaries: (query) => inner.listAppSummaries(query),
    putApp: (record) => write([app(record.id)], () => inner.putApp(record)),
    putMachineState: (id, state) => write([app(id)], () => inner.putMachineState(id, state)),
    deleteApp: (id) => write([app(id)], () => inner.deleteApp(id)),

    addVersion: (version) => write([app(version.appId)], () => inner.addVersion(version)),
    listVersions: (appId) => inner.listVersions(appId),
    getVersion: (appId, version) => inner.getVersion(appId, version),
    setVersionOutcome: (appId, version, outcome) =>
      write([app(appId)], () => inner.setVersionOutcome(appId, version, outcome)),
    pruneVersions: (appId, keep) => write([app(appId)], () => inner.pruneVersions(appId, keep)),
    sourceKeys: () => inner.sourceKeys(),
    hasSourceKey: (key) => inner.hasSourceKey(key),

    getUser: (id) => inner.getUser(id),
    listUsers: () => inner.listUsers(),
    ensureUser(record) {
      const key = user(record.id);
      const inserted = inner.getUser(record.id) === undefined;
      const stored = write([key], () => inner.ensureUser(record));
      // Two replicas inserting the same user at once: the first to land is the one kept.
      if (inserted) writer.createOnly(key);
      return stored;
    },
    putUser: (record) => write([user(record.id)], () => inner.putUser(record)),
    deleteUser: (id) => write([user(id)], () => inner.deleteUser(id)),
    findUserByKeyHash: (keyHash) => inner.findUserByKeyHash(keyHash),

    getDepartment: (id) => inner.getDepartment(id),
    listDepartments: () => inner.listDepartments(),
    putDepartment: (record) => write([department(record.id)], () => inner.putDepartment(record)),
    deleteDepartment: (id) => write([department(id)], () => inner.deleteDepartment(id)),

    addShareLink() {
      throw shareLinksUnavailable();
    },
    getShareLink: () => undefined,
    listShareLinks: () => [],
    revokeShareLink: () => false,

    // The trail stays in memory (bounded): the spec's audit persistence for this backend.
    appendAudit: (event) => write([], () => inner.appendAudit(event)),
    listAudit: (query) => inner.listAudit(query),

    getMeta: (key) => inner.getMeta(key),
    setMeta: (key, value) => write([objectKey('meta', key)], () => inner.setMeta(key, value)),
    // Its writes reach the API server behind the mirror anyway: there is no sync to skip.
    unsynced: (run) => run(),
    // Writes land through the API server: flush() is what waits for them.
    syncWritten: () => undefined,
  };
}

/** The answer share links get on this backend: the same as ShareService gives without SQLite. */
function shareLinksUnavailable(): AppError {
  return new AppError(
    503,
    'share_links_unavailable',
    'share links need store.backend: sqlite (this server runs store.backend: configmap)',
  );
}
