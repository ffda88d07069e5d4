/**
 * Slipway's own lines in an app's log (`[slipway] serving version 3`): what happened to which
 * version, in the words a developer reading the stream needs. The supervisor adds the prefix.
 */
import { describeExit } from './app-status.js';
import type { AppContext, AppMachineEvent } from './app-types.js';

export type NoteKind =
  | 'starting'
  | 'serving'
  | 'failed'
  | 'cancelled'
  | 'restarting'
  | 'exited'
  | 'idle'
  | 'suspended'
  | 'woke';

type Write = (c: AppContext, e: AppMachineEvent) => string;

const NOTES: Record<NoteKind, Write> = {
  starting: (c) => `version ${c.version} starting`,
  serving: (c) => `serving version ${c.version}`,
  // Written before the candidate is dropped: `version` is the one that failed, `live` what serves.
  failed: (c) => `version ${c.version} failed: ${c.reason}: ${firstLine(c.message)}${after(c)}`,
  cancelled: (c) => `the deploy of version ${c.version} was cancelled${after(c)}`,
  restarting: (c, e) => `version ${c.version} exited with ${exitOf(e)}, restarting`,
  exited: (c, e) =>
    `version ${c.live ?? '?'} exited with ${exitOf(e)} while version ${c.version} deploys`,
  idle: () => 'suspended (idle)',
  suspended: () => 'suspended',
  woke: (c) => `woke; starting version ${c.version}`,
};

export function noteText(kind: NoteKind, c: AppContext, e: AppMachineEvent): string {
  return NOTES[kind](c, e);
}

/** What serves once the candidate is gone. */
function after(c: AppContext): string {
  if (c.live === null || c.live === c.version) return '';
  if (c.reason === 'CrashedAfterSwitch') return `; version ${c.live} serves again`;
  return c.serving !== null
    ? `; version ${c.live} is still serving`
    : `; version ${c.live} wakes on the next request`;
}

const exitOf = (e: AppMachineEvent): string =>
  e.type === 'APP_EXITED' ? describeExit(e) : 'an unknown status';

/** Messages may carry the app's last lines; those are in the log already. */
const firstLine = (text: string): string =>
  (text.split('\n', 1)[0] ?? '').replace(/; last lines:$/, '');
