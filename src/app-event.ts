// Shared by the server and the dashboard (web/ imports it): nothing here imports anything, so
// both type-check it with their own settings.

/** An app's phase, as the API and the store name it. */
export type Phase = 'Pending' | 'Claiming' | 'Starting' | 'Ready' | 'Suspended' | 'Failed';

export type ActivityStep =
  'queued' | 'installing' | 'building' | 'starting' | 'health-checking' | 'switching';

/** The App view's `activity` (spec: present only while a deploy, rollback or resume is in flight). */
export interface Activity {
  step: ActivityStep;
  /** ISO 8601 UTC of when this step began. */
  since: string;
  /** The newest install or build line, at most 500 characters. */
  last_line?: string;
}

/** A lifecycle event of one app, for SSE (/api/events), the audit trail and metrics. */
export interface AppEvent {
  kind: 'phase' | 'deploy' | 'delete' | 'suspend' | 'resume';
  app_id: string;
  owner: string;
  /** `Deleted` only on the `delete` event: the app is gone. */
  phase: Phase | 'Deleted';
  version?: number;
  reason: string;
  message: string;
  /** ISO 8601 UTC. */
  time: string;
  /** `system` for idle suspend and wake-by-request. */
  initiator: 'user' | 'system';
  /** While a deploy, rollback or resume is in flight: what it does now (actors/app-activity.ts). */
  activity?: Activity;
  /** With `activity`: how long a poller should wait before asking again. */
  poll_after_seconds?: number;
}
