import type { Database } from 'better-sqlite3';

/**
 * Schema migrations, applied in order. `PRAGMA user_version` holds how many have been applied, so a
 * step must never be edited or reordered once released: add a new step instead.
 */
export interface Migration {
  description: string;
  sql: string;
}

export const migrations: readonly Migration[] = [
  {
    description: 'initial schema',
    sql: `
      CREATE TABLE apps (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        owner_id TEXT NOT NULL,
        department TEXT,
        phase TEXT NOT NULL,
        reason TEXT NOT NULL,
        message TEXT NOT NULL,
        url TEXT,
        lane TEXT NOT NULL,
        template TEXT NOT NULL,
        entrypoint TEXT,
        env TEXT NOT NULL,
        allowed_hosts TEXT NOT NULL,
        ttl TEXT NOT NULL,
        current_version INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        last_deployed_at TEXT NOT NULL,
        snapshot TEXT
      ) STRICT;
      CREATE INDEX apps_owner_name ON apps (owner_id, name);

      -- Deferred so a deploy may write its version and its app row in either order inside one
      -- transaction; the check still runs at commit, so no orphan version can be committed.
      CREATE TABLE versions (
        app_id TEXT NOT NULL
          REFERENCES apps (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
        version INTEGER NOT NULL,
        timestamp TEXT NOT NULL,
        template TEXT NOT NULL,
        lane TEXT NOT NULL,
        entrypoint TEXT,
        source_hash TEXT NOT NULL,
        source_key TEXT NOT NULL,
        rolled_back_from INTEGER,
        PRIMARY KEY (app_id, version)
      ) STRICT;

      CREATE TABLE users (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        email TEXT,
        role TEXT NOT NULL,
        status TEXT NOT NULL,
        department TEXT,
        api_key_hash TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      ) STRICT;
      -- Unique: one key hash resolving to two users would make authentication ambiguous.
      CREATE UNIQUE INDEX users_api_key_hash ON users (api_key_hash)
        WHERE api_key_hash IS NOT NULL;

      CREATE TABLE departments (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        description TEXT,
        created_at TEXT NOT NULL
      ) STRICT;

      CREATE TABLE share_links (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        token TEXT NOT NULL UNIQUE,
        app_id TEXT NOT NULL
          REFERENCES apps (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
        owner_id TEXT NOT NULL,
        password_hash TEXT,
        expires_in TEXT,
        expires_at TEXT,
        created_at TEXT NOT NULL,
        revoked_at TEXT
      ) STRICT;
      CREATE INDEX share_links_app ON share_links (app_id, created_at);

      -- seq breaks ties between events stamped with the same time (newest first = highest seq).
      CREATE TABLE audit_events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        time TEXT NOT NULL,
        actor TEXT NOT NULL,
        action TEXT NOT NULL,
        target TEXT NOT NULL,
        outcome TEXT NOT NULL,
        tenant_id TEXT NOT NULL,
        source_hash TEXT NOT NULL
      ) STRICT;
      CREATE INDEX audit_events_time ON audit_events (time, seq);
      -- The trail is evidence: make it append-only in the database itself, not only in the code.
      CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
        BEGIN SELECT RAISE(ABORT, 'audit_events is append-only'); END;
      CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events
        BEGIN SELECT RAISE(ABORT, 'audit_events is append-only'); END;

      CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
      ) STRICT;
    `,
  },
  {
    description: 'releases: metadata and outcome per version, live version and last deploy per app',
    sql: `
      ALTER TABLE versions ADD COLUMN env TEXT;
      ALTER TABLE versions ADD COLUMN allowed_hosts TEXT;
      ALTER TABLE versions ADD COLUMN ttl TEXT;
      ALTER TABLE versions ADD COLUMN outcome TEXT;
      ALTER TABLE versions ADD COLUMN reason TEXT;
      ALTER TABLE versions ADD COLUMN message TEXT;
      ALTER TABLE apps ADD COLUMN live_version INTEGER;
      ALTER TABLE apps ADD COLUMN last_deploy TEXT;

      -- Older versions never kept their metadata: the app's current metadata is the best we know.
      UPDATE versions SET
        env = (SELECT env FROM apps WHERE apps.id = versions.app_id),
        allowed_hosts = (SELECT allowed_hosts FROM apps WHERE apps.id = versions.app_id),
        ttl = (SELECT ttl FROM apps WHERE apps.id = versions.app_id);
      -- Only the current version's outcome can be told from its app's phase; older ones stay unknown.
      UPDATE versions SET outcome = (
        SELECT CASE apps.phase WHEN 'Failed' THEN 'Failed'
          WHEN 'Ready' THEN 'Ready' WHEN 'Suspended' THEN 'Ready' ELSE NULL END
        FROM apps WHERE apps.id = versions.app_id AND apps.current_version = versions.version);
      UPDATE apps SET live_version = current_version WHERE phase IN ('Ready', 'Suspended');
    `,
  },
  {
    description: 'runtime.build: the build command of a release and of its app',
    sql: `
      ALTER TABLE apps ADD COLUMN build TEXT;
      ALTER TABLE versions ADD COLUMN build TEXT;
    `,
  },
  {
    description: 'app access: public or private (NULL: a row from before, public as it was)',
    sql: `
      ALTER TABLE apps ADD COLUMN access TEXT CHECK (access IN ('public', 'private'));
    `,
  },
  {
    description: 'the runtime overrides a release was deployed with (JSON; NULL: none kept)',
    sql: `
      ALTER TABLE versions ADD COLUMN runtime_overrides TEXT;
    `,
  },
  {
    description: 'who deployed each version, and what an audit event adds to its action (JSON)',
    sql: `
      ALTER TABLE versions ADD COLUMN deployed_by TEXT;
      ALTER TABLE audit_events ADD COLUMN details TEXT;
    `,
  },
];

/**
 * Brings the database up to the latest schema. Each step and its version bump commit together, so
 * a crash mid-migration leaves the previous version intact. A database written by a newer Slipway
 * is refused rather than risk this code misreading or corrupting a schema it does not know.
 */
export function migrate(
  db: Database,
  path: string,
  steps: readonly Migration[] = migrations,
): void {
  const current = db.pragma('user_version', { simple: true });
  if (typeof current !== 'number') {
    throw new Error(`cannot read the schema version of ${path}`);
  }
  if (current > steps.length) {
    throw new Error(
      `database ${path} has schema version ${current}, newer than this Slipway supports ` +
        `(${steps.length}); refusing to open it — upgrade Slipway or use another store path`,
    );
  }
  for (let version = current; version < steps.length; version++) {
    const step = steps[version];
    if (step === undefined) break;
    db.transaction(() => {
      db.exec(step.sql);
      // PRAGMA takes no bound parameters; `version` is a loop counter, never input.
      db.pragma(`user_version = ${version + 1}`);
    })();
  }
}
