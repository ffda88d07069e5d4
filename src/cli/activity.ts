/**
 * What an in-flight deploy, rollback or resume is doing (the App view's `activity`). Servers older
 * than issue 29 send none: every reader takes it as optional.
 */
export interface Activity {
  step: string;
  /** ISO 8601 UTC: when this step began. */
  since: string;
  last_line?: string;
}

const LABELS: Record<string, string> = {
  queued: 'queued',
  installing: 'installing dependencies',
  building: 'building',
  starting: 'starting',
  'health-checking': 'checking health',
  switching: 'switching traffic to the new version',
};

/** The line a person reads when a step begins; a step this CLI does not know is shown as sent. */
export const activityLine = (activity: Activity): string =>
  `  ${LABELS[activity.step] ?? activity.step}...`;
