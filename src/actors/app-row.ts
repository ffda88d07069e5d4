import { releaseOf } from '../persistence/release.js';
import type { AppRecord, Store } from '../persistence/store.js';
import { recordFields, type AppSnapshot } from './app-snapshot.js';

/**
 * Writes the machine-owned fields of one app's row (phase, reason, message, url, currentVersion,
 * snapshot) over whatever the deploy service stored, skipping writes that would change nothing.
 * Once a deploy is over, the row's release fields (runtime, env, egress, ttl) are those of the
 * release that serves: a failed candidate's stay on its version, not on the app.
 */
export class AppRowWriter {
  private written = '';
  private row: AppRecord | undefined;

  constructor(
    private readonly store: Store,
    private readonly appId: string,
    private readonly url: string,
  ) {}

  /** The row as last written, for callers that outlive it (delete). */
  last(): AppRecord | undefined {
    return this.row;
  }

  owner(): string {
    return (this.row ?? this.store.getApp(this.appId))?.ownerId ?? '';
  }

  /** Stores the snapshot; true when the phase, reason or message shown to users changed. */
  write(snapshot: AppSnapshot): boolean {
    const fields = recordFields(snapshot, this.url);
    if (fields.snapshot === this.written) return false;
    const row = this.store.getApp(this.appId);
    if (!row) return false; // being deleted
    const settled = fields.phase === 'Ready' || fields.phase === 'Suspended';
    const live = settled ? fields.liveVersion : undefined;
    const release = live === undefined ? undefined : this.store.getVersion(this.appId, live);
    const next: AppRecord = { ...row, ...fields, ...(release ? releaseOf(release, row) : {}) };
    this.store.putApp(next);
    this.written = fields.snapshot ?? '';
    const before = this.row;
    this.row = next;
    return (
      before?.phase !== next.phase ||
      before.reason !== next.reason ||
      before.message !== next.message
    );
  }

  /** The machine itself broke: the row says so, and a restart begins from Failed. */
  fail(message: string): void {
    const row = this.store.getApp(this.appId);
    if (!row) return;
    this.row = { ...row, phase: 'Failed', reason: 'InternalError', message, snapshot: undefined };
    this.store.putApp(this.row);
  }
}
