import type { AppLogLine } from '../actors/log-ring.js';
import type { AppEvent, AppRegistry } from '../actors/registry.js';
import { isAdmin, type Identity } from '../auth/identity.js';
import { HEALTH_CHECKING_NOTE } from '../actors/app-activity.js';
import { NOTE_PREFIX } from '../runtime/runtime.js';

/** One `notifications/progress` of a call that carried a progressToken. */
export interface ProgressUpdate {
  progress: number;
  total: number;
  message: string;
}

export type ProgressSink = (update: ProgressUpdate) => void;

/** The stages of a deploy, rollback or wake, in the order they come; `progress` is the rank. */
export type Stage =
  'queued' | 'installing' | 'building' | 'starting' | 'health-checking' | 'switching' | 'serving';

const RANK: Record<Stage, number> = {
  queued: 1,
  installing: 2,
  building: 3,
  starting: 4,
  'health-checking': 5,
  switching: 6,
  serving: 7,
};
const TOTAL = 7;

/** What a still-going deploy is doing, as results and notifications say it. */
export const ACTIVITY: Record<Stage, string> = {
  queued: 'queued',
  installing: 'installing dependencies',
  building: 'building',
  starting: 'starting the app',
  'health-checking': 'waiting for the app to answer',
  switching: 'switching traffic to the new version',
  serving: 'serving',
};

/** The install step's own lines (src/agent/install-step.ts tags them). */
const INSTALL_TAG = '[install] ';
/** A step that installs dependencies; any other step of the install is a build. */
const INSTALL_COMMAND = /^\$ (npm (ci|install)|pip3? install|python3? -m pip install)\b/;
/** The machine's note when a version that went live exits within the stability window. */
const CRASHED_AFTER_SWITCH = /^version \d+ failed: CrashedAfterSwitch: /;
/** npm's and pip's output lines arrive in bursts: one notification per this many ms at most. */
const DETAIL_INTERVAL_MS = 500;

export interface WatchOptions {
  registry: AppRegistry;
  identity: Identity;
  appId: string;
  /** `deploy` for deploy_app and rollback_app (a new version), `resume` for resume_app. */
  kind: 'deploy' | 'resume';
  /** The lane of a version: a general-lane `starting` note is followed by its install. */
  laneOf: (version: number) => string | undefined;
  /** Present when the call carried a progressToken. */
  sink?: ProgressSink;
}

/**
 * Follows one deploy (or wake) of one app while its call waits: the registry's lifecycle events
 * name the version and say whether the app was deleted or a newer deploy came; the `[slipway]`
 * notes and `[install]` lines of that version in the app's log say which stage it is in. Every
 * new stage is a progress notification when the caller asked for them; the stage it ended in is
 * what a still-going result reports.
 */
export class DeployWatch {
  stage: Stage = 'queued';
  /** The version this call is about, once the registry announced it. */
  version: number | undefined;
  /** The newest version a deploy of this app announced meanwhile (ours or a later one). */
  newest: number | undefined;
  deleted = false;
  private details = 0;
  private lastDetailAt = 0;
  private readonly since = new Date().toISOString();
  private readonly unsubscribe: Array<() => void> = [];
  private readonly waiting: Array<(version: number) => void> = [];

  constructor(private readonly opts: WatchOptions) {
    this.unsubscribe.push(opts.registry.on((event) => this.onEvent(event)));
    this.emit(RANK.queued, ACTIVITY.queued);
  }

  /** Runs `fn` with the version this call is about, now or once the registry announced it. */
  whenVersion(fn: (version: number) => void): void {
    if (this.version !== undefined) fn(this.version);
    else this.waiting.push(fn);
  }

  stop(): void {
    for (const off of this.unsubscribe.splice(0)) off();
  }

  private onEvent(event: AppEvent): void {
    if (event.app_id !== this.opts.appId || !this.mayWatch(event)) return;
    if (event.kind === 'delete') this.deleted = true;
    if (event.kind === 'deploy' && event.version !== undefined) {
      this.newest = Math.max(this.newest ?? 0, event.version);
    }
    if (event.kind !== this.opts.kind || event.version === undefined) return;
    if (this.version !== undefined) return;
    this.version = event.version;
    for (const fn of this.waiting.splice(0)) fn(event.version);
    // Only now: the app exists and is the caller's, so its lines are theirs to see.
    const follower = { line: (line: AppLogLine) => this.onLine(line), end: () => undefined };
    this.unsubscribe.push(this.opts.registry.followLogs(this.opts.appId, follower));
    // A wake writes its note before it announces itself: lines of this call so far come first.
    for (const line of this.opts.registry.logs(this.opts.appId, this.version)) {
      if (line.time >= this.since) this.onLine(line);
    }
  }

  /** Another owner's app with the same name is never followed (the call will say name_taken). */
  private mayWatch(event: AppEvent): boolean {
    return isAdmin(this.opts.identity) || event.owner === this.opts.identity.userId;
  }

  private onLine(line: AppLogLine): void {
    if (line.version !== this.version) return;
    if (line.stream === 'system' && line.text.startsWith(NOTE_PREFIX)) {
      this.onNote(line.text.slice(NOTE_PREFIX.length));
    } else if (line.text.startsWith(INSTALL_TAG)) {
      this.onInstallLine(line.text.slice(INSTALL_TAG.length));
    }
  }

  private onNote(note: string): void {
    if (/^version \d+ starting$/.test(note)) {
      // On the general lane a sandbox was claimed and its install comes next.
      if (this.opts.laneOf(this.version ?? 0) !== 'general') this.advance('starting');
    } else if (note.includes('building: installing')) {
      this.advance('installing');
    } else if (/ installed in |built tree restored|^woke; starting /.test(note)) {
      this.advance('starting', note.replace(/^version \d+:? /, ''));
    } else if (HEALTH_CHECKING_NOTE.test(note)) {
      this.advance('health-checking');
    } else if (note.startsWith('switching traffic to ')) {
      this.advance('switching');
    } else if (note.startsWith('serving version ')) {
      this.advance('serving');
    } else if (this.stage === 'serving' && CRASHED_AFTER_SWITCH.test(note)) {
      // It went live, then died within the stability window: one last update says so.
      this.emit(TOTAL + 1, note, TOTAL + 1);
    }
  }

  private onInstallLine(text: string): void {
    if (text.startsWith('$ ')) {
      this.advance(INSTALL_COMMAND.test(text) ? 'installing' : 'building', text.slice(2));
      return;
    }
    if (this.stage !== 'installing' && this.stage !== 'building') return;
    if (text.trim() === '') return;
    const now = Date.now();
    if (now - this.lastDetailAt < DETAIL_INTERVAL_MS) return;
    this.lastDetailAt = now;
    this.details += 1;
    // Within the stage's unit, approaching the next stage without reaching it: always increasing.
    const progress = RANK[this.stage] + 1 - 1 / (this.details + 1);
    this.emit(progress, `${ACTIVITY[this.stage]}: ${text}`);
  }

  /** Stages only move forward: a late or repeated note never sends progress backwards. */
  private advance(stage: Stage, detail?: string): void {
    if (RANK[stage] <= RANK[this.stage]) return;
    this.stage = stage;
    this.details = 0;
    this.emit(RANK[stage], detail ? `${ACTIVITY[stage]}: ${detail}` : ACTIVITY[stage]);
  }

  private emit(progress: number, message: string, total = TOTAL): void {
    this.opts.sink?.({ progress, total, message });
  }
}
