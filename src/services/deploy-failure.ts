/**
 * The spec's `500 deploy_failed`: when a deploy or rollback ended badly, and what still serves.
 * Blue/green (design.md §3): a failed candidate beside a serving release leaves the app Ready on
 * it, so the answer is read from the version's own outcome, not only from the app's phase.
 */
import { AppError } from '../errors.js';
import type { AppRecord } from '../persistence/store.js';

/** A deploy that failed, with the app's diagnosis in details and which version still serves. */
export function deployFailed(
  appId: string,
  reason: string,
  message: string,
  opts: { logs?: string[]; serving?: number; phase?: string } = {},
): AppError {
  const { logs, serving } = opts;
  const still = serving === undefined ? '' : `; version ${serving} is still serving`;
  return new AppError(
    500,
    'deploy_failed',
    `deploy of ${appId} failed: ${reason}: ${message}${still}`,
    {
      app_id: appId,
      phase: opts.phase ?? (serving === undefined ? 'Failed' : 'Ready'),
      reason,
      message,
      status_url: `/v1/apps/${appId}`,
      ...(serving === undefined ? {} : { live_version: serving }),
      ...(logs ? { logs } : {}),
    },
  );
}

/** The version that serves (or wakes) right now, if any. */
export function servingVersion(app: AppRecord): number | undefined {
  const serves = app.phase !== 'Failed' && app.liveVersion !== undefined;
  return serves ? app.liveVersion : undefined;
}

/**
 * The error a deploy of `version` ended in, or undefined when it served or is still on its way.
 * A cancelled one did not serve either: its answer says so (reason `Cancelled`), and what serves.
 */
export function deployFailure(
  app: AppRecord,
  version: number,
  logs: string[],
): AppError | undefined {
  const last = app.lastDeploy;
  if (last?.version === version && (last.outcome === 'Failed' || last.outcome === 'Cancelled')) {
    const serving = servingVersion(app);
    const how = { logs, serving, phase: app.phase };
    return deployFailed(app.id, last.reason ?? 'Failed', last.message ?? '', how);
  }
  if (app.phase === 'Failed') return deployFailed(app.id, app.reason, app.message, { logs });
  return undefined;
}
