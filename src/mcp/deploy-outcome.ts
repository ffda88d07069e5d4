import { POLL_AFTER_SECONDS, type Activity, type ActivityStep } from '../actors/app-activity.js';
import { AppError } from '../errors.js';
import type { AppRecord } from '../persistence/store.js';
import { deployFailure, servingVersion } from '../services/deploy-failure.js';
import { firstLine, toolError, type ToolError } from './errors.js';
import { DeployWatch, type Stage } from './progress.js';
import type { CallContext } from './tool.js';
import { FAILURE_LOG_LINES, lastLogLines } from './tools/logs.js';

/**
 * How long a call that carried a progressToken stays open for its deploy, rollback or resume
 * (README: MCP, Waiting); past it, the result says what it does and how to keep waiting.
 */
export const PROGRESS_WAIT_MS = 5 * 60_000;

/** The agent's own words for a port it was not told to listen on (src/agent/inject.ts). */
const REROUTED = /the app listens on port (\d+), not on \$PORT \((\d+)\): routing to \d+/;

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
  activity?: Activity;
  poll_after_seconds?: number;
  next_step?: string;
  warnings?: string[];
  superseded_by?: number;
  error?: Pick<ToolError, 'code' | 'message' | 'next_step'>;
}

/** The step a watch saw, for when the registry has no activity to tell (its actor restarted). */
const STEP_OF: Record<Stage, ActivityStep> = {
  queued: 'queued',
  installing: 'installing',
  building: 'building',
  starting: 'starting',
  'health-checking': 'health-checking',
  switching: 'switching',
  serving: 'switching',
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
  if (app.lastDeploy?.version === version && app.lastDeploy.outcome === 'Cancelled') {
    const still = serving === undefined ? '' : `; version ${serving} is still serving`;
    const message = `the deploy of version ${version} was cancelled${still}`;
    const error = {
      code: 'deploy_cancelled',
      message,
      next_step: `call ${tool} again to deploy it`,
    };
    const report = { ...base, phase: app.phase, reason: 'Cancelled', message };
    return overtaken(report, error);
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
  const rerouted = reroutedPort(ctx, app.id, version);
  if (rerouted) report.warnings = [rerouted];
  if (!served) {
    const activity = ctx.services.registry.activity(app.id) ?? {
      step: STEP_OF[watch.stage],
      since: new Date().toISOString(),
    };
    report.activity = activity;
    report.poll_after_seconds = POLL_AFTER_SECONDS[activity.step];
    report.next_step =
      `call wait_for_app with app_id "${app.id}" to wait for its next step ` +
      `(or get_app after ${report.poll_after_seconds} s)`;
  }
  return { report };
}

/** The deploy's log says the app ignored $PORT: the result says so, and what to change. */
function reroutedPort(ctx: CallContext, appId: string, version: number): string | undefined {
  const lines = ctx.services.registry.logs(appId, version);
  for (const line of lines) {
    const found = REROUTED.exec(line.text);
    if (found) {
      return (
        `the app listens on port ${found[1]}, not on $PORT (${found[2]}): Slipway routes to ` +
        `${found[1]} since it is the only port it listens on; read the port from the PORT ` +
        'environment variable so that it keeps working'
      );
    }
  }
  return undefined;
}

/**
 * With a progressToken, the call stays open (up to PROGRESS_WAIT_MS) until the deploy of
 * `version` (or, without one, the resume) served or failed; without one, the row as it is.
 */
export async function followToEnd(
  ctx: CallContext,
  app: AppRecord,
  version: number | undefined,
): Promise<AppRecord> {
  if (!ctx.progress || ctx.signal.aborted) return app;
  const settled =
    app.phase === 'Ready' || app.phase === 'Failed' || app.phase === 'Suspended'
      ? version === undefined ||
        app.lastDeploy?.version !== version ||
        app.lastDeploy.outcome !== 'Pending'
      : false;
  if (settled) return app;
  const after = await ctx.services.registry.awaitSettled(app.id, version, {
    waitMs: PROGRESS_WAIT_MS,
    cut: ctx.signal,
  });
  return after ?? app;
}

/**
 * The client cancelled the call (`notifications/cancelled`): the deploy it made, once known, is
 * cancelled too; what serves goes on serving. Returns the function that stops listening.
 */
export function cancelOnAbort(ctx: CallContext, appId: string, watch: DeployWatch): () => void {
  const cancelNow = (version: number): void => {
    try {
      ctx.services.apps.cancel(ctx.identity, appId, version);
    } catch (err) {
      // It served, failed or was overtaken meanwhile: there is nothing left to cancel.
      if (err instanceof AppError && err.code === 'nothing_to_cancel') return;
      ctx.log('warn', 'cancelling a deploy its caller cancelled failed', { app: appId, err });
    }
  };
  // Next turn: the announcement may come from inside the transition that made the deploy.
  const cancel = (): void => watch.whenVersion((v) => void setImmediate(() => cancelNow(v)));
  const { cancelled } = ctx;
  if (cancelled.aborted) cancel();
  else cancelled.addEventListener('abort', cancel, { once: true });
  return () => cancelled.removeEventListener('abort', cancel);
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
