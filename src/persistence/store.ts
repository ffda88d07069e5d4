import type { Phase } from '../app-event.js';
import type { AuditAction } from '../audit-actions.js';
import type { Lane } from '../sources/templates.js';

/**
 * The store: everything Slipway must not forget. Three backends implement it: `sqlite` (durable,
 * better-sqlite3 in WAL mode, the default), `memory` (lost on restart) and `configmap` (Kubernetes
 * ConfigMaps behind an in-memory mirror). Calls are synchronous; when a write returns, it is on
 * disk (sqlite) or queued for the API server (configmap, see `flush`).
 */
export interface Store {
  readonly backend: 'sqlite' | 'memory' | 'configmap';
  /** True when the backend can answer (readiness). */
  ping(): boolean;
  /**
   * Resolves once every write made so far has landed where it lasts; rejects with a storage fault
   * when the backend cannot take them now (they stay queued). Absent where a write that returned
   * has already landed (sqlite, memory). Awaited before a change is acknowledged.
   */
  flush?(): Promise<void>;
  close(): void;
  /** Runs `fn` atomically: all its writes land or none do. */
  transaction<T>(fn: () => T): T;

  getApp(id: string): AppRecord | undefined;
  listApps(query: ListAppsQuery): { items: AppRecord[]; total: number };
  /** `getApp` for a view: the env's names only, no value decrypted or copied. */
  getAppSummary(id: string): AppSummary | undefined;
  /** `listApps` for a view, as `getAppSummary`. */
  listAppSummaries(query: ListAppsQuery): { items: AppSummary[]; total: number };
  /** Inserts or replaces the app row. */
  putApp(app: AppRecord): void;
  /**
   * Writes the app machine's own fields into the stored row and leaves the rest as stored (its
   * env is neither opened nor sealed again); false when no such app is stored.
   */
  putMachineState(id: string, state: AppMachineState): boolean;
  /** Deletes the app with its versions and share links; returns the deleted versions (for blobs). */
  deleteApp(id: string): VersionRecord[];

  addVersion(version: VersionRecord): void;
  /** Newest first. */
  listVersions(appId: string): VersionRecord[];
  getVersion(appId: string, version: number): VersionRecord | undefined;
  /** Records how a version's deploy ended; false when no such version is stored. */
  setVersionOutcome(appId: string, version: number, outcome: VersionOutcome): boolean;
  /** Keeps the newest `keep` versions of the app; returns the pruned ones (for blob deletion). */
  pruneVersions(appId: string, keep: number): VersionRecord[];
  /** Every source key a stored version points to: the blobs that must not be swept. */
  sourceKeys(): Set<string>;
  /** Whether a stored version points to `key`; the sweep's last look before removing a blob. */
  hasSourceKey(key: string): boolean;

  getUser(id: string): UserRecord | undefined;
  listUsers(): UserRecord[];
  /** Inserts the user if no user has that id; returns the stored row either way. */
  ensureUser(user: UserRecord): UserRecord;
  putUser(user: UserRecord): void;
  deleteUser(id: string): boolean;
  findUserByKeyHash(keyHash: string): UserRecord | undefined;

  getDepartment(id: string): DepartmentRecord | undefined;
  listDepartments(): DepartmentRecord[];
  putDepartment(department: DepartmentRecord): void;
  deleteDepartment(id: string): boolean;

  addShareLink(link: ShareLinkRecord): void;
  getShareLink(token: string): ShareLinkRecord | undefined;
  /** Active (not revoked) links of the app, newest first. */
  listShareLinks(appId: string): ShareLinkRecord[];
  revokeShareLink(token: string, at: string): boolean;

  appendAudit(event: AuditEvent): void;
  /** Newest first. */
  listAudit(query: AuditQuery): AuditEvent[];

  getMeta(key: string): string | undefined;
  setMeta(key: string, value: string): void;
  /**
   * Runs writes that need not survive a power cut: they are in the store at once and survive a
   * crash of this process, but nothing waits for the disk (no fsync); the next write that does
   * wait takes them with it.
   */
  unsynced<T>(run: () => T): T;
  /**
   * Takes every write so far to disk, writing nothing new: it works on a full disk, where the
   * next synced commit would be refused. For an answer that must not wait for a commit that failed.
   */
  syncWritten(): void;
}

/** Who may open an app's URL: anyone, or only holders of a grant (owner's bearer, share link). */
export type Access = 'public' | 'private';

export type { Phase };
export type Role = 'admin' | 'user';
export type UserStatus = 'active' | 'suspended';

export interface EnvItem {
  name: string;
  value: string;
}

/** An env entry's name alone: what every view of an app shows. */
export interface EnvName {
  name: string;
}

/**
 * An app as a view shows it: its env names without their values (none is opened to read it), and
 * without the machine snapshot.
 */
export type AppSummary = Omit<AppRecord, 'env' | 'snapshot'> & { env: EnvName[] };

export interface AppRecord {
  id: string;
  name: string;
  ownerId: string;
  department?: string;
  phase: Phase;
  reason: string;
  message: string;
  url?: string;
  lane: Lane;
  template: string;
  entrypoint?: string;
  /** runtime.build: the shell command that builds the release instead of `npm run build`. */
  build?: string;
  env: EnvItem[];
  allowedHosts: string[];
  /** Idle time before suspend, Go duration text. */
  ttl: string;
  /** Absent on rows stored before apps had an access setting: those were, and stay, public. */
  access?: Access;
  currentVersion: number;
  createdAt: string;
  lastDeployedAt: string;
  /** The version the app serves, or wakes to; absent when nothing can serve. Machine-owned. */
  liveVersion?: number;
  /** How the newest deploy or rollback went. Machine-owned. */
  lastDeploy?: DeployRecord;
  /** Persisted app-machine snapshot (JSON), owned by src/actors. */
  snapshot?: string;
}

/** The fields of an app row its machine owns (src/actors/app-row.ts writes them). */
export type AppMachineState = Pick<
  AppRecord,
  | 'phase'
  | 'reason'
  | 'message'
  | 'url'
  | 'currentVersion'
  | 'liveVersion'
  | 'lastDeploy'
  | 'snapshot'
>;

/** `Pending` while the version deploys, `Ready` once it served, `Failed` with why. */
export type Outcome = 'Pending' | 'Ready' | 'Failed' | 'Cancelled';

export interface VersionOutcome {
  outcome: Outcome;
  reason?: string;
  message?: string;
}

export interface DeployRecord extends VersionOutcome {
  version: number;
}

export interface ListAppsQuery {
  /** Only this owner's apps; omitted = every app (admins, auth disabled). */
  ownerId?: string;
  /** 0 or omitted = no paging. */
  limit?: number;
  offset?: number;
}

export interface VersionRecord {
  appId: string;
  version: number;
  timestamp: string;
  template: string;
  lane: Lane;
  entrypoint?: string;
  /** runtime.build of this release: a rollback runs the build it was deployed with. */
  build?: string;
  /**
   * The runtime lane, template and entrypoint the deploy asked for, as opposed to what the
   * classifier made of the source (lane, template, entrypoint above): a redeploy that names no
   * runtime asks for them again. Absent: none asked for, or stored before they were kept.
   */
  overrides?: RuntimeOverrides;
  sourceHash: string;
  /** Blob key `<app_id>.v<version>.<32 hex>`, minted once and never re-derived. */
  sourceKey: string;
  rolledBackFrom?: number;
  /**
   * The release's own metadata: a rollback restores it. Absent only on versions stored before
   * releases kept it (memory stores of older builds); their app's current metadata stands in.
   */
  env?: EnvItem[];
  allowedHosts?: string[];
  ttl?: string;
  /** The user ID that deployed, rolled back to or reconfigured this version; absent on older rows. */
  deployedBy?: string;
  /** Absent on versions deployed before outcomes were recorded (except the one a migration saw). */
  outcome?: Outcome;
  reason?: string;
  message?: string;
}

export interface RuntimeOverrides {
  lane?: Lane;
  template?: string;
  entrypoint?: string;
}

export interface UserRecord {
  id: string;
  name: string;
  email?: string;
  role: Role;
  status: UserStatus;
  department?: string;
  /** sha256 hex of the user's API key, for keys Slipway issued; never the key itself. */
  apiKeyHash?: string;
  createdAt: string;
  updatedAt: string;
}

export interface DepartmentRecord {
  id: string;
  name: string;
  description?: string;
  createdAt: string;
}

export interface ShareLinkRecord {
  token: string;
  appId: string;
  ownerId: string;
  /** scrypt hash `scrypt$N=<n>,r=<r>,p=<p>$<salt hex>$<hash hex>`; never leaves the server. */
  passwordHash?: string;
  expiresIn?: string;
  expiresAt?: string;
  createdAt: string;
  revokedAt?: string;
}

export {
  ADMIN_AUDIT_ACTIONS,
  APP_AUDIT_ACTIONS,
  type AdminAuditAction,
  type AppAuditAction,
  type AuditAction,
} from '../audit-actions.js';

/** What an event adds to its action: never a secret (no env value, key or password). */
export interface AuditDetails {
  /** The version a deploy, rollback or config release made. */
  version?: number;
  /** A rollback: the version that served before it (if any) and the one whose release it restored. */
  rollback?: { from?: number; to: number };
  /** An update: each field it changed, with the old and new value where they are not private. */
  changes?: AuditChange[];
  /** A refusal or failure: its error code and what the caller was told. */
  reason?: string;
  message?: string;
}

export interface AuditChange {
  field: string;
  from?: string;
  to?: string;
}

/**
 * `ok`: done (for a deploy: accepted, Ready or on its way). `denied`: refused by ownership, scope,
 * name, quota or policy. `failed`: accepted, but the app failed (deploy_failed). `rejected`: bad
 * input (the tarball). `noop`: allowed, but the app was in no phase the action applies to.
 * `error`: the server failed.
 */
export type AuditOutcome = 'ok' | 'denied' | 'failed' | 'rejected' | 'noop' | 'error';

export interface AuditEvent {
  id: string;
  time: string;
  actor: string;
  action: AuditAction;
  target: string;
  outcome: AuditOutcome;
  tenant_id: string;
  source_hash: string;
  /** Absent on events that add nothing to their action, and on events stored before details. */
  details?: AuditDetails;
}

export interface AuditQuery {
  actor?: string;
  action?: string;
  /** Any of these actions (with `action`, both must match). */
  actions?: readonly string[];
  app?: string;
  /** Only events at or after this ISO 8601 time. */
  since?: string;
  limit: number;
}
