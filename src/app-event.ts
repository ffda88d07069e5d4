// Shared by the server and the dashboard (web/ imports it): nothing here imports anything, so
// both type-check it with their own settings.

/** An app's phase, as the API and the store name it. */
export type Phase = 'Pending' | 'Claiming' | 'Starting' | 'Ready' | 'Suspended' | 'Failed';

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
}
