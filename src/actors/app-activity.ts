/**
 * What a deploy, rollback or resume in flight is doing now (issue 29): a step, when it began and
 * the newest install or build line. Memory only, derived from the machine's phase and the lines the
 * candidate's sandbox prints; the machine itself knows nothing of it (design.md §3).
 */
import type { AppState } from '../machines/app-machine.js';
import { NOTE_PREFIX } from '../runtime/runtime.js';
import type { AppLogLine } from './log-ring.js';

import type { Activity, ActivityStep } from '../app-event.js';

export type { Activity, ActivityStep };

export const LAST_LINE_MAX = 500;

/** How long a poller waits before asking again: installs and builds take minutes, the rest seconds. */
export const POLL_AFTER_SECONDS: Record<ActivityStep, number> = {
  queued: 2,
  installing: 5,
  building: 5,
  starting: 2,
  'health-checking': 2,
  switching: 1,
};

/** The install step's own lines (src/agent/install-step.ts tags them). */
const INSTALL_TAG = '[install] ';
/** A step that installs dependencies; any other step of the install is a build. */
const INSTALL_COMMAND = /^\$ (npm (ci|install)|pip3? install|python3? -m pip install)\b/;

/**
 * The runtime's note when the candidate's process is started and Slipway waits for it to answer
 * (src/runtime/local/inject-call.ts writes it).
 */
export const HEALTH_CHECKING_NOTE = /^version \d+: started, waiting for it to answer$/;

/** Phases of a start in flight; Claiming and Pending are still waiting for a sandbox. */
const WAITING: ReadonlySet<AppState> = new Set(['Pending', 'Claiming']);

export class AppActivity {
  private current: Activity | undefined;
  /** The version whose start is followed: lines of any other are not this activity's. */
  private version = 0;

  /**
   * @param changed called when the step changes (`step`) or a new line came (`line`).
   */
  constructor(
    private readonly now: () => number,
    private readonly changed: (what: 'step' | 'line') => void,
  ) {}

  /** The activity now, or undefined when nothing is in flight. */
  get view(): Activity | undefined {
    return this.current && { ...this.current };
  }

  /** A deploy, rollback or resume of `version` was asked for: it is queued until it moves. */
  begin(version: number): void {
    this.version = version;
    this.current = undefined;
    this.move('queued');
  }

  /**
   * The machine's phase after a transition. A start in flight (`lane` is the version's) shows as
   * queued until its sandbox is claimed, then installing on the general lane (`laneOf` the version),
   * or starting.
   */
  phase(state: AppState, version: number, laneOf: () => string | undefined): void {
    if (!this.current) return;
    if (!WAITING.has(state) && state !== 'Starting') {
      this.current = undefined;
      this.changed('step');
      return;
    }
    this.version = version;
    if (state === 'Starting' && this.current.step === 'queued') {
      this.move(laneOf() === 'general' ? 'installing' : 'starting');
    }
  }

  /** A line of the app's log: the install's lines and Slipway's notes say where the start is. */
  line(line: AppLogLine): void {
    if (!this.current || line.version !== this.version) return;
    const { text } = line;
    if (line.stream === 'system' && text.startsWith(NOTE_PREFIX)) {
      const note = text.slice(NOTE_PREFIX.length);
      if (note.includes('building: installing')) this.move('installing');
      else if (/ installed in |built tree restored/.test(note)) this.move('starting');
      else if (HEALTH_CHECKING_NOTE.test(note)) this.move('health-checking');
      return;
    }
    if (!text.startsWith(INSTALL_TAG)) return;
    const own = text.slice(INSTALL_TAG.length);
    if (own.startsWith('$ ')) this.move(INSTALL_COMMAND.test(own) ? 'installing' : 'building');
    if (own.trim() === '' || !this.current) return;
    this.current.last_line = own.slice(0, LAST_LINE_MAX);
    this.changed('line');
  }

  /**
   * The candidate answered and traffic moves to it now (a redeploy's or rollback's switch): the
   * supervisor says so just before the machine takes the result in.
   */
  switching(): void {
    if (this.current) this.move('switching');
  }

  private move(step: ActivityStep): void {
    if (this.current?.step === step) return;
    this.current = { step, since: new Date(this.now()).toISOString() };
    this.changed('step');
  }
}
