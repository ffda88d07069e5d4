import type {
  Access,
  AppMachineState,
  AppRecord,
  AppSummary,
  AuditAction,
  AuditDetails,
  AuditEvent,
  AuditOutcome,
  DeployRecord,
  DepartmentRecord,
  EnvItem,
  EnvName,
  Outcome,
  Phase,
  Role,
  RuntimeOverrides,
  ShareLinkRecord,
  UserRecord,
  UserStatus,
  VersionRecord,
} from './store.js';
import type { Lane } from '../sources/templates.js';

/**
 * Row shapes of the SQLite tables and their mapping to and from the store records. NULL columns
 * become absent fields (not `null`, not `undefined`-valued keys). The memory store copies records
 * through the same mapping, so both backends normalise records identically.
 */

export interface AppRow {
  id: string;
  name: string;
  owner_id: string;
  department: string | null;
  phase: string;
  reason: string;
  message: string;
  url: string | null;
  /** Written only from a typed AppRecord. */
  lane: Lane;
  template: string;
  entrypoint: string | null;
  build: string | null;
  env: string;
  allowed_hosts: string;
  ttl: string;
  access: string | null;
  current_version: number;
  created_at: string;
  last_deployed_at: string;
  live_version: number | null;
  last_deploy: string | null;
  snapshot: string | null;
}

export interface VersionRow {
  app_id: string;
  version: number;
  timestamp: string;
  template: string;
  /** Written only from a typed VersionRecord. */
  lane: Lane;
  entrypoint: string | null;
  build: string | null;
  runtime_overrides: string | null;
  source_hash: string;
  source_key: string;
  rolled_back_from: number | null;
  env: string | null;
  allowed_hosts: string | null;
  ttl: string | null;
  outcome: string | null;
  reason: string | null;
  message: string | null;
  deployed_by: string | null;
}

export interface UserRow {
  id: string;
  name: string;
  email: string | null;
  role: string;
  status: string;
  department: string | null;
  api_key_hash: string | null;
  created_at: string;
  updated_at: string;
}

export interface DepartmentRow {
  id: string;
  name: string;
  description: string | null;
  created_at: string;
}

export interface ShareLinkRow {
  token: string;
  app_id: string;
  owner_id: string;
  password_hash: string | null;
  expires_in: string | null;
  expires_at: string | null;
  created_at: string;
  revoked_at: string | null;
}

export interface AuditRow {
  id: string;
  time: string;
  actor: string;
  action: string;
  target: string;
  outcome: string;
  tenant_id: string;
  source_hash: string;
  /** AuditDetails as JSON; NULL when the event has none. */
  details: string | null;
}

/** Copies `value` onto `target[key]` only when the column was not NULL. */
function opt<T extends object, K extends keyof T>(target: T, key: K, value: T[K] | null): void {
  if (value !== null && value !== undefined) target[key] = value;
}

export function appFromRow(row: AppRow): AppRecord {
  const app: AppRecord = { ...appSummaryFromRow(row, []), env: envFromJson(row.env) };
  opt(app, 'snapshot', row.snapshot);
  return app;
}

/** The columns a summary reads: every one but the machine snapshot. */
export type AppSummaryRow = Omit<AppRow, 'snapshot'>;

/** The row as a view shows it, with `env` (the names) read by the caller from the env column. */
export function appSummaryFromRow(row: AppSummaryRow, env: EnvName[]): AppSummary {
  const app: AppSummary = {
    id: row.id,
    name: row.name,
    ownerId: row.owner_id,
    // Only putApp writes this column, always from a typed AppRecord.
    phase: row.phase as Phase,
    reason: row.reason,
    message: row.message,
    lane: row.lane,
    template: row.template,
    env,
    allowedHosts: JSON.parse(row.allowed_hosts) as string[],
    ttl: row.ttl,
    currentVersion: row.current_version,
    createdAt: row.created_at,
    lastDeployedAt: row.last_deployed_at,
  };
  opt(app, 'department', row.department);
  opt(app, 'url', row.url);
  opt(app, 'entrypoint', row.entrypoint);
  opt(app, 'build', row.build);
  // Only putApp writes this column, always from a typed AppRecord.
  opt(app, 'access', row.access as Access | null);
  opt(app, 'liveVersion', row.live_version);
  if (row.last_deploy !== null) app.lastDeploy = deployFromJson(row.last_deploy);
  return app;
}

/** The names of an env list's JSON text (an app's env column, opened). */
export const envNamesFromJson = (text: string): EnvName[] =>
  envFromJson(text).map((item) => ({ name: item.name }));

export function appToRow(app: AppRecord): AppRow {
  return {
    ...machineStateToRow(app),
    id: app.id,
    name: app.name,
    owner_id: app.ownerId,
    department: app.department ?? null,
    lane: app.lane,
    template: app.template,
    entrypoint: app.entrypoint ?? null,
    build: app.build ?? null,
    env: envToJson(app.env),
    allowed_hosts: JSON.stringify(app.allowedHosts),
    ttl: app.ttl,
    access: app.access ?? null,
    created_at: app.createdAt,
    last_deployed_at: app.lastDeployedAt,
  };
}

/** The columns of an app row its machine owns (AppMachineState). */
export type MachineStateRow = Pick<
  AppRow,
  | 'phase'
  | 'reason'
  | 'message'
  | 'url'
  | 'current_version'
  | 'live_version'
  | 'last_deploy'
  | 'snapshot'
>;

export function machineStateToRow(state: AppMachineState): MachineStateRow {
  return {
    phase: state.phase,
    reason: state.reason,
    message: state.message,
    url: state.url ?? null,
    current_version: state.currentVersion,
    live_version: state.liveVersion ?? null,
    last_deploy: state.lastDeploy ? JSON.stringify(deployToJson(state.lastDeploy)) : null,
    snapshot: state.snapshot ?? null,
  };
}

export function versionFromRow(row: VersionRow): VersionRecord {
  const v: VersionRecord = {
    appId: row.app_id,
    version: row.version,
    timestamp: row.timestamp,
    template: row.template,
    lane: row.lane,
    sourceHash: row.source_hash,
    sourceKey: row.source_key,
  };
  opt(v, 'entrypoint', row.entrypoint);
  opt(v, 'build', row.build);
  if (row.runtime_overrides !== null) {
    v.overrides = JSON.parse(row.runtime_overrides) as RuntimeOverrides;
  }
  opt(v, 'rolledBackFrom', row.rolled_back_from);
  if (row.env !== null) v.env = envFromJson(row.env);
  if (row.allowed_hosts !== null) v.allowedHosts = JSON.parse(row.allowed_hosts) as string[];
  opt(v, 'ttl', row.ttl);
  opt(v, 'deployedBy', row.deployed_by);
  // Only setVersionOutcome and addVersion write this column, always from a typed record.
  opt(v, 'outcome', row.outcome as Outcome | null);
  opt(v, 'reason', row.reason);
  opt(v, 'message', row.message);
  return v;
}

export function versionToRow(v: VersionRecord): VersionRow {
  return {
    app_id: v.appId,
    version: v.version,
    timestamp: v.timestamp,
    template: v.template,
    lane: v.lane,
    entrypoint: v.entrypoint ?? null,
    build: v.build ?? null,
    runtime_overrides: v.overrides ? JSON.stringify(v.overrides) : null,
    source_hash: v.sourceHash,
    source_key: v.sourceKey,
    rolled_back_from: v.rolledBackFrom ?? null,
    env: v.env ? envToJson(v.env) : null,
    allowed_hosts: v.allowedHosts ? JSON.stringify(v.allowedHosts) : null,
    ttl: v.ttl ?? null,
    outcome: v.outcome ?? null,
    reason: v.reason ?? null,
    message: v.message ?? null,
    deployed_by: v.deployedBy ?? null,
  };
}

const envToJson = (env: EnvItem[]): string =>
  JSON.stringify(env.map((e) => ({ name: e.name, value: e.value })));
const envFromJson = (text: string): EnvItem[] => JSON.parse(text) as EnvItem[];

/** A fixed key order, so equal records store equal text. */
function deployToJson(d: DeployRecord): DeployRecord {
  const out: DeployRecord = { version: d.version, outcome: d.outcome };
  if (d.reason !== undefined) out.reason = d.reason;
  if (d.message !== undefined) out.message = d.message;
  return out;
}
const deployFromJson = (text: string): DeployRecord =>
  deployToJson(JSON.parse(text) as DeployRecord);

export function userFromRow(row: UserRow): UserRecord {
  const u: UserRecord = {
    id: row.id,
    name: row.name,
    role: row.role as Role,
    status: row.status as UserStatus,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
  opt(u, 'email', row.email);
  opt(u, 'department', row.department);
  opt(u, 'apiKeyHash', row.api_key_hash);
  return u;
}

export function userToRow(u: UserRecord): UserRow {
  return {
    id: u.id,
    name: u.name,
    email: u.email ?? null,
    role: u.role,
    status: u.status,
    department: u.department ?? null,
    api_key_hash: u.apiKeyHash ?? null,
    created_at: u.createdAt,
    updated_at: u.updatedAt,
  };
}

export function departmentFromRow(row: DepartmentRow): DepartmentRecord {
  const d: DepartmentRecord = { id: row.id, name: row.name, createdAt: row.created_at };
  opt(d, 'description', row.description);
  return d;
}

export function departmentToRow(d: DepartmentRecord): DepartmentRow {
  return {
    id: d.id,
    name: d.name,
    description: d.description ?? null,
    created_at: d.createdAt,
  };
}

export function shareLinkFromRow(row: ShareLinkRow): ShareLinkRecord {
  const l: ShareLinkRecord = {
    token: row.token,
    appId: row.app_id,
    ownerId: row.owner_id,
    createdAt: row.created_at,
  };
  opt(l, 'passwordHash', row.password_hash);
  opt(l, 'expiresIn', row.expires_in);
  opt(l, 'expiresAt', row.expires_at);
  opt(l, 'revokedAt', row.revoked_at);
  return l;
}

export function shareLinkToRow(l: ShareLinkRecord): ShareLinkRow {
  return {
    token: l.token,
    app_id: l.appId,
    owner_id: l.ownerId,
    password_hash: l.passwordHash ?? null,
    expires_in: l.expiresIn ?? null,
    expires_at: l.expiresAt ?? null,
    created_at: l.createdAt,
    revoked_at: l.revokedAt ?? null,
  };
}

export function auditFromRow(row: AuditRow): AuditEvent {
  const event: AuditEvent = {
    id: row.id,
    time: row.time,
    actor: row.actor,
    action: row.action as AuditAction,
    target: row.target,
    // Written only from a typed AuditEvent, like the action.
    outcome: row.outcome as AuditOutcome,
    tenant_id: row.tenant_id,
    source_hash: row.source_hash,
  };
  if (row.details !== null) event.details = JSON.parse(row.details) as AuditDetails;
  return event;
}

export function auditToRow(e: AuditEvent): AuditRow {
  return {
    id: e.id,
    time: e.time,
    actor: e.actor,
    action: e.action,
    target: e.target,
    outcome: e.outcome,
    tenant_id: e.tenant_id,
    source_hash: e.source_hash,
    details: e.details ? JSON.stringify(e.details) : null,
  };
}
