import type { Database } from 'better-sqlite3';
import type {
  AppRow,
  AuditRow,
  DepartmentRow,
  MachineStateRow,
  ShareLinkRow,
  UserRow,
  VersionRow,
} from './rows.js';

/** `LIMIT -1` is SQLite for "no limit"; it lets one statement serve paged and unpaged reads. */
export const NO_LIMIT = -1;

interface Page {
  limit: number;
  offset: number;
}

interface AuditFilter {
  actor: string | null;
  action: string | null;
  /** A JSON array of actions, any of which matches. */
  actions: string | null;
  target: string | null;
  since: string | null;
  limit: number;
}

const APP_COLS =
  'id, name, owner_id, department, phase, reason, message, url, lane, template, entrypoint, ' +
  'env, allowed_hosts, ttl, current_version, created_at, last_deployed_at, live_version, ' +
  'last_deploy, snapshot, build, access';
/** The columns putMachineState writes (MachineStateRow). */
const MACHINE_COLS = [
  'phase',
  'reason',
  'message',
  'url',
  'current_version',
  'live_version',
  'last_deploy',
  'snapshot',
] as const satisfies readonly (keyof MachineStateRow)[];
/**
 * What a view reads of an app, every column but the machine snapshot, as one JSON object (an
 * AppSummaryRow): the driver builds a row object column by column, which cost about as much again
 * as the query itself, where JSON.parse of one text is cheap.
 */
const SUMMARY_JSON = `json_object(${APP_COLS.split(', ')
  .filter((col) => col !== 'snapshot')
  .map((col) => `'${col}', ${col}`)
  .join(', ')})`;
const VERSION_COLS =
  'app_id, version, timestamp, template, lane, entrypoint, source_hash, source_key, ' +
  'rolled_back_from, env, allowed_hosts, ttl, outcome, reason, message, build, runtime_overrides, ' +
  'deployed_by';
const USER_COLS = 'id, name, email, role, status, department, api_key_hash, created_at, updated_at';
const DEPARTMENT_COLS = 'id, name, description, created_at';
const LINK_COLS =
  'token, app_id, owner_id, password_hash, expires_in, expires_at, created_at, revoked_at';
const AUDIT_COLS = 'id, time, actor, action, target, outcome, tenant_id, source_hash, details';

const params = (cols: string): string =>
  cols
    .split(', ')
    .map((c) => `@${c}`)
    .join(', ');

/** An upsert that updates in place: `INSERT OR REPLACE` would delete the row first and so cascade. */
const upsert = (table: string, cols: string): string =>
  `INSERT INTO ${table} (${cols}) VALUES (${params(cols)}) ON CONFLICT (id) DO UPDATE SET ` +
  cols
    .split(', ')
    .filter((c) => c !== 'id')
    .map((c) => `${c} = excluded.${c}`)
    .join(', ');

/** Every statement the store runs, prepared once when the store opens. */
export function prepareStatements(db: Database) {
  const s = db.prepare.bind(db);
  return {
    ping: s<[], number>('SELECT 1').pluck(),

    getApp: s<[string], AppRow>(`SELECT ${APP_COLS} FROM apps WHERE id = ?`),
    listApps: s<Page, AppRow>(
      `SELECT ${APP_COLS} FROM apps ORDER BY name, id LIMIT @limit OFFSET @offset`,
    ),
    listAppsOf: s<Page & { owner: string }, AppRow>(
      `SELECT ${APP_COLS} FROM apps WHERE owner_id = @owner ORDER BY name, id ` +
        'LIMIT @limit OFFSET @offset',
    ),
    getAppSummary: s<[string], string>(`SELECT ${SUMMARY_JSON} FROM apps WHERE id = ?`).pluck(),
    listAppSummaries: s<Page, string>(
      `SELECT ${SUMMARY_JSON} FROM apps ORDER BY name, id LIMIT @limit OFFSET @offset`,
    ).pluck(),
    listAppSummariesOf: s<Page & { owner: string }, string>(
      `SELECT ${SUMMARY_JSON} FROM apps WHERE owner_id = @owner ORDER BY name, id ` +
        'LIMIT @limit OFFSET @offset',
    ).pluck(),
    countApps: s<[], number>('SELECT count(*) FROM apps').pluck(),
    countAppsOf: s<[string], number>('SELECT count(*) FROM apps WHERE owner_id = ?').pluck(),
    putApp: s<AppRow>(upsert('apps', APP_COLS)),
    putMachineState: s<MachineStateRow & { id: string }>(
      `UPDATE apps SET ${MACHINE_COLS.map((col) => `${col} = @${col}`).join(', ')} WHERE id = @id`,
    ),
    deleteApp: s<[string]>('DELETE FROM apps WHERE id = ?'),

    addVersion: s<VersionRow>(
      `INSERT INTO versions (${VERSION_COLS}) VALUES (${params(VERSION_COLS)})`,
    ),
    listVersions: s<[string], VersionRow>(
      `SELECT ${VERSION_COLS} FROM versions WHERE app_id = ? ORDER BY version DESC`,
    ),
    versionsBeyond: s<[string, number], VersionRow>(
      `SELECT ${VERSION_COLS} FROM versions WHERE app_id = ? ORDER BY version DESC ` +
        'LIMIT -1 OFFSET ?',
    ),
    getVersion: s<[string, number], VersionRow>(
      `SELECT ${VERSION_COLS} FROM versions WHERE app_id = ? AND version = ?`,
    ),
    setVersionOutcome: s<{
      app_id: string;
      version: number;
      outcome: string;
      reason: string | null;
      message: string | null;
    }>(
      'UPDATE versions SET outcome = @outcome, reason = @reason, message = @message ' +
        'WHERE app_id = @app_id AND version = @version',
    ),
    sourceKeys: s<[], string>('SELECT source_key FROM versions').pluck(),
    hasSourceKey: s<[string], number>(
      'SELECT 1 FROM versions WHERE source_key = ? LIMIT 1',
    ).pluck(),
    deleteVersion: s<[string, number]>('DELETE FROM versions WHERE app_id = ? AND version = ?'),
    deleteVersionsOf: s<[string]>('DELETE FROM versions WHERE app_id = ?'),

    getUser: s<[string], UserRow>(`SELECT ${USER_COLS} FROM users WHERE id = ?`),
    listUsers: s<[], UserRow>(`SELECT ${USER_COLS} FROM users ORDER BY id`),
    insertUserIfAbsent: s<UserRow>(
      `INSERT INTO users (${USER_COLS}) VALUES (${params(USER_COLS)}) ` +
        'ON CONFLICT (id) DO NOTHING',
    ),
    putUser: s<UserRow>(upsert('users', USER_COLS)),
    deleteUser: s<[string]>('DELETE FROM users WHERE id = ?'),
    findUserByKeyHash: s<[string], UserRow>(
      `SELECT ${USER_COLS} FROM users WHERE api_key_hash = ?`,
    ),

    getDepartment: s<[string], DepartmentRow>(
      `SELECT ${DEPARTMENT_COLS} FROM departments WHERE id = ?`,
    ),
    listDepartments: s<[], DepartmentRow>(`SELECT ${DEPARTMENT_COLS} FROM departments ORDER BY id`),
    putDepartment: s<DepartmentRow>(upsert('departments', DEPARTMENT_COLS)),
    deleteDepartment: s<[string]>('DELETE FROM departments WHERE id = ?'),

    addShareLink: s<ShareLinkRow>(
      `INSERT INTO share_links (${LINK_COLS}) VALUES (${params(LINK_COLS)})`,
    ),
    getShareLink: s<[string], ShareLinkRow>(`SELECT ${LINK_COLS} FROM share_links WHERE token = ?`),
    listShareLinks: s<[string], ShareLinkRow>(
      `SELECT ${LINK_COLS} FROM share_links WHERE app_id = ? AND revoked_at IS NULL ` +
        'ORDER BY created_at DESC, seq DESC',
    ),
    revokeShareLink: s<[string, string]>(
      'UPDATE share_links SET revoked_at = ? WHERE token = ? AND revoked_at IS NULL',
    ),
    deleteShareLinksOf: s<[string]>('DELETE FROM share_links WHERE app_id = ?'),

    appendAudit: s<AuditRow>(
      `INSERT INTO audit_events (${AUDIT_COLS}) VALUES (${params(AUDIT_COLS)})`,
    ),
    listAudit: s<AuditFilter, AuditRow>(
      `SELECT ${AUDIT_COLS} FROM audit_events ` +
        'WHERE (@actor IS NULL OR actor = @actor) AND (@action IS NULL OR action = @action) ' +
        'AND (@actions IS NULL OR action IN (SELECT value FROM json_each(@actions))) ' +
        'AND (@target IS NULL OR target = @target) AND (@since IS NULL OR time >= @since) ' +
        'ORDER BY time DESC, seq DESC LIMIT @limit',
    ),

    getMeta: s<[string], string>('SELECT value FROM meta WHERE key = ?').pluck(),
    setMeta: s<[string, string]>(
      'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
    ),
  };
}

export type Statements = ReturnType<typeof prepareStatements>;
