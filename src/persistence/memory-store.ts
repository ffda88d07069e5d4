import {
  allVersions,
  cloneState,
  compareText,
  constraintError,
  copyApp,
  summaryOf,
  copyDepartment,
  copyLink,
  copyUser,
  copyVersion,
  emptyState,
  isThenable,
  newestVersionFirst,
  page,
  type MemoryState,
} from './memory-state.js';
import { appFromRow, appToRow, auditFromRow, auditToRow, machineStateToRow } from './rows.js';
import type { AppRecord, Store, UserRecord, VersionRecord } from './store.js';

export interface MemoryStoreOptions {
  /** Audit events kept; past it the oldest go. Unbounded when omitted. */
  maxAuditEvents?: number;
}

/** The memory store and a view of its live tables, for a backend that mirrors them (configmap). */
export interface MemoryMirror {
  store: Store;
  /** The tables as they are now; replace records in them, never mutate one in place. */
  tables(): MemoryState;
}

/**
 * The non-durable backend: same contract as the SQLite store, including its constraints, so code
 * tested against one behaves the same on the other. Each write validates before it mutates, which
 * makes single writes atomic without a snapshot; `transaction` snapshots and restores on a throw.
 */
export function createMemoryStore(options: MemoryStoreOptions = {}): Store {
  return createMemoryMirror(options).store;
}

export function createMemoryMirror(options: MemoryStoreOptions = {}): MemoryMirror {
  let state = emptyState();
  let open = true;
  let depth = 0;

  const db = (): MemoryState => {
    if (!open) throw new TypeError('The database connection is not open');
    return state;
  };
  /** The apps of an owner (every app when undefined), in the list's order. */
  const appsOf = (ownerId: string | undefined): AppRecord[] =>
    [...db().apps.values()]
      .filter((a) => ownerId === undefined || a.ownerId === ownerId)
      .sort((a, b) => compareText(a.name, b.name) || compareText(a.id, b.id));
  const hasRows = (s: MemoryState, appId: string): boolean =>
    (s.versions.get(appId)?.size ?? 0) > 0 ||
    [...s.links.values()].some(({ link }) => link.appId === appId);
  // Like SQLite's deferred foreign keys: outside a transaction the reference must hold now; inside
  // one it only has to hold when the outermost transaction commits.
  const requireApp = (s: MemoryState, appId: string): void => {
    if (depth > 0) s.pendingRefs.add(appId);
    else if (!s.apps.has(appId)) throw constraintError('FOREIGN KEY', `no app ${appId}`);
  };
  const checkPendingRefs = (s: MemoryState): void => {
    for (const appId of s.pendingRefs) {
      if (!s.apps.has(appId) && hasRows(s, appId)) {
        throw constraintError('FOREIGN KEY', `no app ${appId}`);
      }
    }
    s.pendingRefs.clear();
  };

  const putUser = (user: UserRecord): void => {
    const s = db();
    if (user.apiKeyHash !== undefined) {
      for (const other of s.users.values()) {
        if (other.apiKeyHash === user.apiKeyHash && other.id !== user.id) {
          throw constraintError('UNIQUE', 'users.api_key_hash');
        }
      }
    }
    s.users.set(user.id, copyUser(user));
  };

  const store: Store = {
    backend: 'memory',

    ping: () => open,
    close() {
      open = false;
    },
    transaction(fn) {
      const saved = cloneState(db());
      depth++;
      try {
        const result = fn();
        if (isThenable(result)) {
          throw new TypeError('Transaction function cannot return a promise');
        }
        if (depth === 1) checkPendingRefs(state);
        return result;
      } catch (err) {
        state = saved;
        throw err;
      } finally {
        depth--;
      }
    },

    getApp(id) {
      const app = db().apps.get(id);
      return app && copyApp(app);
    },
    listApps(query) {
      const all = appsOf(query.ownerId);
      return { items: page(all, query.limit, query.offset).map(copyApp), total: all.length };
    },
    getAppSummary(id) {
      const app = db().apps.get(id);
      return app && summaryOf(app);
    },
    listAppSummaries(query) {
      const all = appsOf(query.ownerId);
      return { items: page(all, query.limit, query.offset).map(summaryOf), total: all.length };
    },
    putApp(app) {
      const s = db();
      for (const other of s.apps.values()) {
        if (other.name === app.name && other.id !== app.id) {
          throw constraintError('UNIQUE', 'apps.name');
        }
      }
      s.apps.set(app.id, copyApp(app));
    },
    putMachineState(id, state) {
      const s = db();
      const stored = s.apps.get(id);
      if (!stored) return false;
      // Through the row shapes, as SQLite writes it: a machine field left unset is cleared.
      s.apps.set(id, appFromRow({ ...appToRow(stored), ...machineStateToRow(state) }));
      return true;
    },
    deleteApp(id) {
      const s = db();
      const versions = [...(s.versions.get(id)?.values() ?? [])].sort(newestVersionFirst);
      s.versions.delete(id);
      for (const [token, { link }] of s.links) if (link.appId === id) s.links.delete(token);
      s.apps.delete(id);
      return versions.map(copyVersion);
    },

    addVersion(version) {
      const s = db();
      const byNumber = s.versions.get(version.appId) ?? new Map<number, VersionRecord>();
      if (byNumber.has(version.version)) {
        throw constraintError('UNIQUE', 'versions.app_id, versions.version');
      }
      requireApp(s, version.appId);
      byNumber.set(version.version, copyVersion(version));
      s.versions.set(version.appId, byNumber);
    },
    listVersions(appId) {
      return [...(db().versions.get(appId)?.values() ?? [])]
        .sort(newestVersionFirst)
        .map(copyVersion);
    },
    getVersion(appId, version) {
      const v = db().versions.get(appId)?.get(version);
      return v && copyVersion(v);
    },
    setVersionOutcome(appId, version, outcome) {
      const byNumber = db().versions.get(appId);
      const stored = byNumber?.get(version);
      if (!byNumber || !stored) return false;
      const next: VersionRecord = { ...stored, ...outcome };
      // An outcome without a reason clears the one a former outcome left, as the SQL update does.
      if (outcome.reason === undefined) delete next.reason;
      if (outcome.message === undefined) delete next.message;
      byNumber.set(version, copyVersion(next));
      return true;
    },
    pruneVersions(appId, keep) {
      const byNumber = db().versions.get(appId);
      if (byNumber === undefined) return [];
      const pruned = [...byNumber.values()]
        .sort(newestVersionFirst)
        .slice(Math.max(0, Math.floor(keep)));
      for (const v of pruned) byNumber.delete(v.version);
      return pruned.map(copyVersion);
    },
    sourceKeys() {
      return new Set([...allVersions(db())].map((v) => v.sourceKey));
    },
    hasSourceKey(key) {
      for (const v of allVersions(db())) if (v.sourceKey === key) return true;
      return false;
    },

    getUser(id) {
      const user = db().users.get(id);
      return user && copyUser(user);
    },
    listUsers() {
      return [...db().users.values()].sort((a, b) => compareText(a.id, b.id)).map(copyUser);
    },
    ensureUser(user) {
      const existing = db().users.get(user.id);
      if (existing === undefined) putUser(user);
      return copyUser(existing ?? user);
    },
    putUser,
    deleteUser(id) {
      return db().users.delete(id);
    },
    findUserByKeyHash(keyHash) {
      for (const user of db().users.values()) {
        if (user.apiKeyHash === keyHash) return copyUser(user);
      }
      return undefined;
    },

    getDepartment(id) {
      const d = db().departments.get(id);
      return d && copyDepartment(d);
    },
    listDepartments() {
      return [...db().departments.values()]
        .sort((a, b) => compareText(a.id, b.id))
        .map(copyDepartment);
    },
    putDepartment(department) {
      db().departments.set(department.id, copyDepartment(department));
    },
    deleteDepartment(id) {
      return db().departments.delete(id);
    },

    addShareLink(link) {
      const s = db();
      if (s.links.has(link.token)) throw constraintError('UNIQUE', 'share_links.token');
      requireApp(s, link.appId);
      s.links.set(link.token, { seq: ++s.seq, link: copyLink(link) });
    },
    getShareLink(token) {
      const entry = db().links.get(token);
      return entry && copyLink(entry.link);
    },
    listShareLinks(appId) {
      return [...db().links.values()]
        .filter(({ link }) => link.appId === appId && link.revokedAt === undefined)
        .sort((a, b) => compareText(b.link.createdAt, a.link.createdAt) || b.seq - a.seq)
        .map(({ link }) => copyLink(link));
    },
    revokeShareLink(token, at) {
      const s = db();
      const entry = s.links.get(token);
      if (entry === undefined || entry.link.revokedAt !== undefined) return false;
      // Replace, never mutate: a transaction snapshot may still hold the old record.
      s.links.set(token, { seq: entry.seq, link: { ...entry.link, revokedAt: at } });
      return true;
    },

    appendAudit(event) {
      const s = db();
      if (s.auditIds.has(event.id)) throw constraintError('UNIQUE', 'audit_events.id');
      s.auditIds.add(event.id);
      s.audit.push({ seq: ++s.seq, event: auditFromRow(auditToRow(event)) });
      const max = options.maxAuditEvents;
      if (max !== undefined && s.audit.length > max) {
        for (const { event: gone } of s.audit.splice(0, s.audit.length - max)) {
          s.auditIds.delete(gone.id);
        }
      }
    },
    listAudit(query) {
      const matching = db()
        .audit.filter(
          ({ event: e }) =>
            (query.actor === undefined || e.actor === query.actor) &&
            (query.action === undefined || e.action === query.action) &&
            (query.actions === undefined || query.actions.includes(e.action)) &&
            (query.app === undefined || e.target === query.app) &&
            (query.since === undefined || compareText(e.time, query.since) >= 0),
        )
        .sort((a, b) => compareText(b.event.time, a.event.time) || b.seq - a.seq);
      return page(matching, query.limit, 0).map(({ event }) => auditFromRow(auditToRow(event)));
    },

    getMeta(key) {
      return db().meta.get(key);
    },
    setMeta(key, value) {
      db().meta.set(key, value);
    },
    unsynced(run) {
      return run();
    },
    syncWritten() {
      // Nothing is on disk to sync.
    },
  };
  return { store, tables: () => state };
}
