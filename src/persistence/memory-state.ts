import {
  appFromRow,
  appSummaryFromRow,
  appToRow,
  departmentFromRow,
  departmentToRow,
  shareLinkFromRow,
  shareLinkToRow,
  userFromRow,
  userToRow,
  versionFromRow,
  versionToRow,
} from './rows.js';
import type {
  AppRecord,
  AppSummary,
  AuditEvent,
  DepartmentRecord,
  ShareLinkRecord,
  UserRecord,
  VersionRecord,
} from './store.js';

/**
 * The memory store's tables. Stored records are never mutated in place (updates replace them), so
 * a snapshot only has to copy the containers, not the records.
 */
export interface MemoryState {
  apps: Map<string, AppRecord>;
  /** app id → version number → version. */
  versions: Map<string, Map<number, VersionRecord>>;
  users: Map<string, UserRecord>;
  departments: Map<string, DepartmentRecord>;
  /** `seq` mirrors SQLite's rowid: it orders rows that share a timestamp. */
  links: Map<string, { seq: number; link: ShareLinkRecord }>;
  audit: { seq: number; event: AuditEvent }[];
  /** Index of audit ids, so the uniqueness check does not scan the whole trail. */
  auditIds: Set<string>;
  meta: Map<string, string>;
  seq: number;
  /** App ids referenced by versions or links written in the open transaction, checked at commit. */
  pendingRefs: Set<string>;
}

export function emptyState(): MemoryState {
  return {
    apps: new Map(),
    versions: new Map(),
    users: new Map(),
    departments: new Map(),
    links: new Map(),
    audit: [],
    auditIds: new Set(),
    meta: new Map(),
    seq: 0,
    pendingRefs: new Set(),
  };
}

export function cloneState(s: MemoryState): MemoryState {
  return {
    apps: new Map(s.apps),
    versions: new Map([...s.versions].map(([id, byNumber]) => [id, new Map(byNumber)])),
    users: new Map(s.users),
    departments: new Map(s.departments),
    links: new Map(s.links),
    audit: s.audit.slice(),
    auditIds: new Set(s.auditIds),
    meta: new Map(s.meta),
    seq: s.seq,
    pendingRefs: new Set(s.pendingRefs),
  };
}

/*
 * Copies go through the SQLite row mapping so the memory backend normalises records exactly as the
 * SQLite one does (unknown keys dropped, unset optionals absent) and shares no nested arrays.
 */
export const copyApp = (a: AppRecord): AppRecord => appFromRow(appToRow(a));
/** The app as a view shows it: the env's names, no value copied. */
export const summaryOf = (a: AppRecord): AppSummary =>
  appSummaryFromRow(
    appToRow(a),
    a.env.map((item) => ({ name: item.name })),
  );
export const copyVersion = (v: VersionRecord): VersionRecord => versionFromRow(versionToRow(v));
export const copyUser = (u: UserRecord): UserRecord => userFromRow(userToRow(u));
export const copyDepartment = (d: DepartmentRecord): DepartmentRecord =>
  departmentFromRow(departmentToRow(d));
export const copyLink = (l: ShareLinkRecord): ShareLinkRecord =>
  shareLinkFromRow(shareLinkToRow(l));

/** Binary string order, as SQLite's default collation sorts ASCII text. */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Mirrors SQLite's message so callers see one error text whichever backend runs. */
export function constraintError(kind: 'UNIQUE' | 'FOREIGN KEY', what: string): Error {
  return new Error(`${kind} constraint failed: ${what}`);
}

export const newestVersionFirst = (a: VersionRecord, b: VersionRecord): number =>
  b.version - a.version;

/** Every stored version of every app, in no particular order. */
export function* allVersions(s: MemoryState): Generator<VersionRecord> {
  for (const byNumber of s.versions.values()) yield* byNumber.values();
}

/** Same slicing as SQLite's `LIMIT n OFFSET m` with non-positive n meaning no limit. */
export function page<T>(items: T[], limit: number | undefined, offset: number | undefined): T[] {
  const from = Math.max(0, offset ?? 0);
  return limit !== undefined && limit > 0
    ? items.slice(from, from + Math.floor(limit))
    : items.slice(from);
}

/** better-sqlite3 refuses async transaction bodies the same way: their writes would escape it. */
export function isThenable(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
