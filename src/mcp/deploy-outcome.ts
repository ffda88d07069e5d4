import type { AppRecord } from '../persistence/store.js';
import { deployFailure, servingVersion } from '../services/deploy-failure.js';
import { firstLine, toolError, type ToolError } from './errors.js';
import { DeployWatch, type Stage } from './progress.js';
import type { CallContext } from './tool.js';
import { FAILURE_LOG_LINES, lastLogLines } from './tools/logs.js';

/** How a deploy or rollback call ended, in the fields deploy_app and rollback_app share. */
export interface DeployReport {
  phase: string;
  reason: string;
  message: string;
  version: number;
  url?: string;
  url_when_live?: string;
  live_version?: number;
  logs?: string[];
  activity?: string;
  poll_after_seconds?: number;
  superseded_by?: number;
  error?: Pick<ToolError, 'code' | 'message' | 'next_step'>;
}

/** While installing or building, minutes are usual; otherwise seconds. */
const POLL_AFTER_S: Record<Stage, number> = {
  queued: 5,
  installing: 10,
  building: 10,
  starting: 3,
  serving: 1,
};

/** Starts following the deploy (or wake) the call is about to make: events, log notes, progress. */
export function watchDeploy(ctx: CallContext, appId: string, kind: 'deploy' | 'resume') {
  return new DeployWatch({
    registry: ctx.services.registry,
    identity: ctx.identity,
    appId,
    kind,
    laneOf: (version) => laneOf(ctx, appId, version),
    sink: ctx.progress,
  });
}

/** The lane a version runs on, as its release records it. */
export function laneOf(ctx: CallContext, appId: string, version: number): string | undefined {
  return ctx.services.apps.versions(ctx.identity, appId).find((v) => v.version === version)?.lane;
}

/**
 * What the call tells the agent, from the row the wait returned and what the watch saw: served;
 * still going (what it does now, where it will be, when to look again); failed (why, the logs
 * once, what still serves); or overtaken: deleted meanwhile, or a newer deploy came before this
 * version served. `failureStep` is the tool's advice for a failed version.
 */
export function reportDeploy(
  ctx: CallContext,
  tool: string,
  outcome: { app: AppRecord; version: number },
  watch: DeployWatch,
  failureStep: string,
): { report: DeployReport; error?: ToolError } {
  const { app, version } = outcome;
  const serving = servingVersion(app);
  const base = { version, ...(serving === undefined ? {} : { live_version: serving }) };
  if (watch.deleted) {
    const message = `app ${app.id} was deleted while version ${version} deployed`;
    const error = {
      code: 'app_deleted',
      message,
      // Its history went with it: only a deploy brings it back, whichever tool this was.
      next_step: 'call deploy_app again to bring it back',
    };
    return overtaken({ version, phase: 'Deleted', reason: 'Deleted', message }, error);
  }
  const head = Math.max(app.currentVersion, app.lastDeploy?.version ?? 0, watch.newest ?? 0);
  if (head > version) {
    const message = `version ${version} was superseded by version ${head} before it served`;
    const error = {
      code: 'superseded',
      message,
      next_step:
        `version ${head} is deploying instead: get_app follows it; call ${tool} again if ` +
        `version ${version}'s release must be the one that serves`,
    };
    const report = { ...base, phase: app.phase, reason: 'Superseded', message };
    return overtaken({ ...report, superseded_by: head }, error);
  }
  const logs = lastLogLines(ctx.services.registry, app.id, FAILURE_LOG_LINES, version);
  const failed = deployFailure(app, version, logs);
  if (failed) {
    const details = failed.details ?? {};
    const reason = String(details.reason);
    const message = firstLine(String(details.message));
    const still = serving === undefined ? '' : `; version ${serving} is still serving`;
    const error = toolError(failed, tool, failureStep);
    error.message = `deploy of ${app.id} failed: ${reason}: ${message}${still}`;
    const phase = typeof details.phase === 'string' ? details.phase : app.phase;
    const report = { ...base, phase, reason, message, logs, error: brief(error) };
    return { report, error };
  }
  const report: DeployReport = {
    ...base,
    phase: app.phase,
    reason: app.reason,
    message: app.message,
  };
  const served = app.phase === 'Ready' && app.liveVersion === version;
  if (app.url && serving !== undefined) report.url = app.url;
  else if (app.url) report.url_when_live = app.url;
  if (!served) {
    report.activity = watch.activity;
    report.poll_after_seconds = POLL_AFTER_S[watch.stage];
  }
  return { report };
}

function overtaken(
  report: DeployReport,
  error: ToolError,
): { report: DeployReport; error: ToolError } {
  return { report: { ...report, error: brief(error) }, error };
}

const brief = (error: ToolError): DeployReport['error'] => ({
  code: error.code,
  message: error.message,
  next_step: error.next_step,
});
