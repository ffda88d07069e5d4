import { releaseOf } from '../persistence/release.js';
import type { AppRecord, Store, VersionRecord } from '../persistence/store.js';
import type { InjectSpec, Lane, Runtime } from '../runtime/runtime.js';

/** What starting one version of an app needs, or why it cannot start before any sandbox exists. */
export type StartPlan =
  { ok: true; template: string; spec: InjectSpec } | { ok: false; reason: string; message: string };

/**
 * Built from the store rows each time it is needed, so a restart or a wake starts exactly what the
 * rows say. Configuration gaps repeat identically on every retry (design.md §3).
 */
export function planStart(
  store: Store,
  runtime: Runtime,
  appId: string,
  version: number,
): StartPlan {
  const app = store.getApp(appId);
  if (!app) return { ok: false, reason: 'NotFound', message: `app ${appId} has no stored record` };
  const row = store.getVersion(appId, version);
  if (!row) {
    return {
      ok: false,
      reason: 'UnknownVersion',
      message: `version ${version} of ${appId} is not stored (it may have been pruned); deploy again`,
    };
  }
  return planRelease(runtime, app, row);
}

/** The plan of a version from its rows, stored or about to be (a deploy's head start). */
export function planRelease(runtime: Runtime, app: AppRecord, row: VersionRecord): StartPlan {
  const { appId, version } = row;
  // Refused at upload (no entrypoint, say): the same diagnosis, and never a sandbox for it.
  if (row.outcome === 'Failed' && row.reason !== undefined) {
    return { ok: false, reason: row.reason, message: row.message ?? '' };
  }
  if (!runtime.templates.includes(row.template)) {
    return {
      ok: false,
      reason: 'UnknownTemplate',
      message:
        `template "${row.template}" is not available on the ${runtime.backend} runtime ` +
        `(available: ${runtime.templates.join(', ') || 'none'}); set the runtime template to one of them`,
    };
  }
  // The version's lane, not the app's: a rollback runs the old source the way it was classified.
  const lane = row.lane;
  if (!isLane(lane)) {
    return {
      ok: false,
      reason: 'UnknownLane',
      message: `version ${version} of ${appId} has lane "${lane}"; deploy again with runtime.lane fast or general`,
    };
  }
  const unavailable = runtime.laneUnavailable(row.template, lane);
  if (unavailable !== undefined) {
    return { ok: false, reason: 'LaneUnavailable', message: unavailable };
  }
  const release = releaseOf(row, app);
  return {
    ok: true,
    template: row.template,
    spec: {
      appId,
      ownerId: app.ownerId,
      version,
      sourceKey: row.sourceKey,
      template: row.template,
      lane,
      entrypoint: row.entrypoint ?? app.entrypoint,
      // The release's own, never the app's: a version deployed without one has no build command.
      ...(row.build !== undefined ? { build: row.build } : {}),
      sourceHash: row.sourceHash,
      // The release's own metadata: a rollback runs with the env it was deployed with.
      env: release.env,
      allowedHosts: release.allowedHosts,
    },
  };
}

function isLane(value: string): value is Lane {
  return value === 'fast' || value === 'general';
}
