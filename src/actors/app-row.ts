import { releaseOf } from '../persistence/release.js';
import type { AppMachineState, AppRecord, Phase, Store } from '../persistence/store.js';
import { recordFields, type AppSnapshot } from './app-snapshot.js';

/**
 * Writes the machine-owned fields of one app's row (phase, reason, message, url, currentVersion,
 * snapshot) over whatever the deploy service stored, skipping writes that would change nothing.
 * Once a deploy is over, the row's release fields (runtime, env, egress, ttl) are those of the
 * release that serves: a failed candidate's stay on its version, not on the app.
 *
 * Staging and writing are apart so that a write the disk refuses can be tried again later: a retry
 * merges the latest snapshot into the row as stored then, never a stale copy of it.
 *
 * Rows are written without waiting for the disk (Store.unsynced): they say what the app's sandbox
 * is doing, and a power cut ends every sandbox anyway. The row an earlier step left (claiming
 * instead of ready, ready instead of suspended) starts the app over on the next boot, as the lost
 * one would have. What users asked for is in the services' synced commits, and every audited
 * action's event, written before its answer, takes the machine's writes before it to disk.
 */
export class AppRowWriter {
  private written = '';
  /** The machine's fields of its latest state, while they wait to be written. */
  private staged: AppMachineState | undefined;
  private row: AppRecord | undefined;
  private shown = '';

  constructor(
    private readonly store: Store,
    private readonly appId: string,
    private readonly url: string,
  ) {}

  /** The row as last written, or as it will be once a waiting write lands. */
  last(): AppRecord | undefined {
    return this.staged ? (this.merge(this.staged) ?? this.row) : this.row;
  }

  /** True while the machine's latest state is not yet on disk. */
  get pending(): boolean {
    return this.staged !== undefined;
  }

  owner(): string {
    return (this.row ?? this.store.getAppSummary(this.appId))?.ownerId ?? '';
  }

  /** Takes the machine's new state; true when the phase, reason or message shown to users changed. */
  stage(snapshot: AppSnapshot): boolean {
    const fields = recordFields(snapshot, this.url);
    if (fields.snapshot === this.written) {
      this.staged = undefined;
      return false;
    }
    this.staged = fields;
    const shown = JSON.stringify([fields.phase, fields.reason, fields.message]);
    if (shown === this.shown) return false;
    this.shown = shown;
    return true;
  }

  /** Writes the staged state; throws when the store does (the caller retries). */
  flush(): void {
    const fields = this.staged;
    if (!fields) return;
    if (settled(fields.phase)) {
      const next = this.merge(fields);
      if (next) {
        this.store.unsynced(() => this.store.putApp(next));
        this.row = next;
        this.written = fields.snapshot ?? '';
      }
    } else if (this.store.unsynced(() => this.store.putMachineState(this.appId, fields))) {
      // On the way (queued, claiming, starting): only the machine's own fields change, written
      // without reading the row back, opening its env and sealing it again.
      if (this.row) this.row = { ...this.row, ...fields };
      this.written = fields.snapshot ?? '';
    }
    // Not written either way only when the app is being deleted: nothing is left to write to.
    this.staged = undefined;
  }

  /** The machine itself broke: the row says so, and a restart begins from Failed. */
  fail(message: string): void {
    const row = this.store.getApp(this.appId);
    if (!row) return;
    this.staged = undefined;
    this.row = { ...row, phase: 'Failed', reason: 'InternalError', message, snapshot: undefined };
    this.store.putApp(this.row);
  }

  private merge(fields: AppMachineState): AppRecord | undefined {
    const row = this.store.getApp(this.appId);
    if (!row) return undefined;
    const live = settled(fields.phase) ? fields.liveVersion : undefined;
    const release = live === undefined ? undefined : this.store.getVersion(this.appId, live);
    return { ...row, ...fields, ...(release ? releaseOf(release, row) : {}) };
  }
}

/** A deploy is over: the row takes the serving release's settings (see AppRowWriter). */
function settled(phase: Phase): boolean {
  return phase === 'Ready' || phase === 'Suspended';
}
