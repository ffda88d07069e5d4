import { closeSync, fsyncSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { migrate } from './migrations.js';
import { sealEnvAtRest, type SealedRows } from './env-at-rest.js';
import type { EnvKeyOptions } from './env-key.js';
import { createPrivateFile, ensurePrivateFile } from './private-files.js';
import {
  auditFromRow,
  auditToRow,
  departmentFromRow,
  departmentToRow,
  shareLinkFromRow,
  shareLinkToRow,
  userFromRow,
  userToRow,
} from './rows.js';
import { NO_LIMIT, prepareStatements } from './sqlite-statements.js';
import { SummaryCache } from './summary-cache.js';
import { machineStateToRow, type AppSummaryRow } from './rows.js';
import type { Store } from './store.js';
import type { Log } from '../logging.js';

/** Long enough to ride out a checkpoint or a backup tool holding the lock, short enough to fail. */
const BUSY_TIMEOUT_MS = 5_000;

/** Non-positive or missing limits mean "everything", as `ListAppsQuery` documents. */
function sqlLimit(limit: number | undefined): number {
  return limit !== undefined && limit > 0 ? Math.floor(limit) : NO_LIMIT;
}

/** SQLite binds integers up to 2^63: a larger offset (valid JSON, past any table) is the last row. */
function sqlOffset(offset: number | undefined): number {
  return Math.min(Math.max(0, Math.floor(offset ?? 0)), Number.MAX_SAFE_INTEGER);
}

export interface SqliteStoreOptions {
  /** Where the env key comes from; by default the key file beside the database. */
  envKey?: EnvKeyOptions;
  log?: Log;
}

/**
 * Opens (creating if needed) the SQLite store at `path`. Every write commits with
 * `synchronous = FULL` in WAL mode, so once a method returns the change survives a power cut, and a
 * handler may acknowledge right after. The file and its WAL are this user's alone (0600, repaired
 * when looser), and env values are sealed at rest (env-at-rest.ts).
 */
export function openSqliteStore(path: string, opts: SqliteStoreOptions = {}): Store {
  mkdirSync(dirname(path), { recursive: true });
  // Created 0600 before SQLite opens it: its -wal and -shm files take the database's mode.
  createPrivateFile(path, opts.log);
  for (const suffix of ['-wal', '-shm', '-journal']) ensurePrivateFile(path + suffix, opts.log);
  const db = new Database(path);
  let rows: SealedRows;
  try {
    configure(db, path);
    migrate(db, path);
    rows = sealEnvAtRest(db, path, opts.envKey ?? { dataDir: dirname(path) }, opts.log);
  } catch (err) {
    db.close();
    throw err;
  }
  const st = prepareStatements(db);
  const summaryFrom = (text: string) => rows.summaryFrom(JSON.parse(text) as AppSummaryRow);
  // IMMEDIATE takes the write lock up front, so a read-then-write transaction cannot hit
  // SQLITE_BUSY halfway through; nested calls become savepoints.
  const writing = db.transaction((fn: () => unknown) => fn()).immediate;
  const summaries = new SummaryCache();
  const inTx = <T>(fn: () => T): T => {
    try {
      return writing(fn) as T;
    } catch (err) {
      // Rolled back: a summary read inside it may show a write that never landed.
      summaries.clear();
      throw err;
    }
  };
  // Multi-statement reads share one snapshot (items and total agree) without taking the write lock.
  const reading = db.transaction((fn: () => unknown) => fn()).deferred;
  const snapshot = <T>(fn: () => T): T => reading(fn) as T;

  return {
    backend: 'sqlite',

    ping() {
      if (!db.open) return false;
      try {
        return st.ping.get() === 1;
      } catch {
        // Readiness must report, not throw: a failing query is exactly the "not ready" answer.
        return false;
      }
    },
    close() {
      db.close();
    },
    transaction: inTx,

    getApp(id) {
      const row = st.getApp.get(id);
      return row && rows.appFrom(row);
    },
    listApps(query) {
      const page = { limit: sqlLimit(query.limit), offset: sqlOffset(query.offset) };
      return snapshot(() => {
        if (query.ownerId === undefined) {
          return {
            items: st.listApps.all(page).map((row) => rows.appFrom(row)),
            total: st.countApps.get() ?? 0,
          };
        }
        const items = st.listAppsOf
          .all({ ...page, owner: query.ownerId })
          .map((row) => rows.appFrom(row));
        return { items, total: st.countAppsOf.get(query.ownerId) ?? 0 };
      });
    },
    getAppSummary(id) {
      return summaries.get(id, () => {
        const text = st.getAppSummary.get(id);
        return text === undefined ? undefined : summaryFrom(text);
      });
    },
    listAppSummaries(query) {
      const page = { limit: sqlLimit(query.limit), offset: sqlOffset(query.offset) };
      return snapshot(() => {
        if (query.ownerId === undefined) {
          return {
            items: st.listAppSummaries.all(page).map(summaryFrom),
            total: st.countApps.get() ?? 0,
          };
        }
        const items = st.listAppSummariesOf.all({ ...page, owner: query.ownerId }).map(summaryFrom);
        return { items, total: st.countAppsOf.get(query.ownerId) ?? 0 };
      });
    },
    putApp(app) {
      summaries.forget(app.id);
      st.putApp.run(rows.appTo(app));
    },
    putMachineState(id, state) {
      summaries.forget(id);
      return st.putMachineState.run({ id, ...machineStateToRow(state) }).changes > 0;
    },
    deleteApp(id) {
      summaries.forget(id);
      return inTx(() => {
        const versions = st.listVersions.all(id).map((row) => rows.versionFrom(row));
        // Explicit deletes rather than relying on ON DELETE CASCADE alone: the cascade needs
        // foreign_keys = ON on every connection, including an operator's sqlite3 shell.
        st.deleteShareLinksOf.run(id);
        st.deleteVersionsOf.run(id);
        st.deleteApp.run(id);
        return versions;
      });
    },

    addVersion(version) {
      st.addVersion.run(rows.versionTo(version));
    },
    listVersions(appId) {
      return st.listVersions.all(appId).map((row) => rows.versionFrom(row));
    },
    getVersion(appId, version) {
      const row = st.getVersion.get(appId, version);
      return row && rows.versionFrom(row);
    },
    setVersionOutcome(appId, version, { outcome, reason, message }) {
      const row = {
        app_id: appId,
        version,
        outcome,
        reason: reason ?? null,
        message: message ?? null,
      };
      return st.setVersionOutcome.run(row).changes > 0;
    },
    pruneVersions(appId, keep) {
      return inTx(() => {
        const pruned = st.versionsBeyond.all(appId, Math.max(0, Math.floor(keep)));
        for (const v of pruned) st.deleteVersion.run(v.app_id, v.version);
        return pruned.map((row) => rows.versionFrom(row));
      });
    },
    sourceKeys() {
      return new Set(st.sourceKeys.all());
    },
    hasSourceKey(key) {
      return st.hasSourceKey.get(key) === 1;
    },

    getUser(id) {
      const row = st.getUser.get(id);
      return row && userFromRow(row);
    },
    listUsers() {
      return st.listUsers.all().map(userFromRow);
    },
    ensureUser(user) {
      return inTx(() => {
        st.insertUserIfAbsent.run(userToRow(user));
        const row = st.getUser.get(user.id);
        if (row === undefined) throw new Error(`user ${user.id} vanished right after insertion`);
        return userFromRow(row);
      });
    },
    putUser(user) {
      st.putUser.run(userToRow(user));
    },
    deleteUser(id) {
      return st.deleteUser.run(id).changes > 0;
    },
    findUserByKeyHash(keyHash) {
      const row = st.findUserByKeyHash.get(keyHash);
      return row && userFromRow(row);
    },

    getDepartment(id) {
      const row = st.getDepartment.get(id);
      return row && departmentFromRow(row);
    },
    listDepartments() {
      return st.listDepartments.all().map(departmentFromRow);
    },
    putDepartment(department) {
      st.putDepartment.run(departmentToRow(department));
    },
    deleteDepartment(id) {
      return st.deleteDepartment.run(id).changes > 0;
    },

    addShareLink(link) {
      st.addShareLink.run(shareLinkToRow(link));
    },
    getShareLink(token) {
      const row = st.getShareLink.get(token);
      return row && shareLinkFromRow(row);
    },
    listShareLinks(appId) {
      return st.listShareLinks.all(appId).map(shareLinkFromRow);
    },
    revokeShareLink(token, at) {
      return st.revokeShareLink.run(at, token).changes > 0;
    },

    appendAudit(event) {
      st.appendAudit.run(auditToRow(event));
    },
    listAudit(query) {
      const rows = st.listAudit.all({
        actor: query.actor ?? null,
        action: query.action ?? null,
        actions: query.actions ? JSON.stringify(query.actions) : null,
        target: query.app ?? null,
        since: query.since ?? null,
        limit: sqlLimit(query.limit),
      });
      return rows.map(auditFromRow);
    },

    getMeta(key) {
      return st.getMeta.get(key);
    },
    setMeta(key, value) {
      st.setMeta.run(key, value);
    },
    syncWritten() {
      // The commits are in the WAL: an fsync of the file takes them to disk, with no new frame.
      let fd: number;
      try {
        fd = openSync(`${path}-wal`, 'r');
      } catch (err) {
        // No WAL: every commit is in the database file, synced by its checkpoint.
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw err;
      }
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    },

    unsynced(run) {
      // WAL at NORMAL: a commit appends to the log without an fsync (0.5 ms at best, 10 ms and
      // more on a busy disk, on the event loop); the next commit at FULL syncs the log, theirs too.
      db.pragma('synchronous = NORMAL');
      try {
        return run();
      } finally {
        db.pragma('synchronous = FULL');
      }
    },
  };
}

function configure(db: Database.Database, path: string): void {
  const mode = db.pragma('journal_mode = WAL', { simple: true });
  if (mode !== 'wal') {
    // Without WAL the durability and concurrency this store promises do not hold: fail loudly.
    throw new Error(`cannot enable WAL on ${path} (journal_mode is ${String(mode)})`);
  }
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  // Deleted and rewritten content is zeroed, not left in free pages (env values sealed later).
  db.pragma('secure_delete = ON');
}
