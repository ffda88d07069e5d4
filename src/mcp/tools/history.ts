import { z } from 'zod';
import { mcpAppView, withoutLogLines } from '../app-view.js';
import { cancelOnAbort, followToEnd, reportDeploy, watchDeploy } from '../deploy-outcome.js';
import { appIdArg, appShape, outcomeShape, progressShape } from '../schemas.js';
import { defineTool, ToolFailure } from '../tool.js';

/** The history tools: the MCP twins of GET /v1/apps/{id}/versions and POST .../rollback. */

const versionShape = {
  version: z.number().int().describe('Version number, increasing with every deploy and rollback.'),
  timestamp: z.string().describe('ISO 8601 UTC time the version was created.'),
  template: z.string().describe('Runner of this version: static, node or python.'),
  lane: z.string().describe('Lane of this version: fast or general.'),
  source_hash: z.string().describe('sha256:<hex> of the source; equal hashes, equal sources.'),
  rolled_back_from: z
    .number()
    .int()
    .optional()
    .describe('Set on a version made by a rollback: the version whose release it restored.'),
  runtime: z
    .object({
      template: z.string(),
      lane: z.string(),
      entrypoint: z.string().optional(),
      build: z.string().optional(),
    })
    .describe('How this version runs; a rollback restores it.'),
  env: z
    .array(z.object({ name: z.string() }))
    .describe('Names of the env variables this version runs with; values are never returned.'),
  egress: z
    .object({ allowed_hosts: z.array(z.string()) })
    .describe('Outbound hosts this version may reach.'),
  ttl: z.string().describe('Idle time before this version is suspended.'),
  outcome: z
    .string()
    .optional()
    .describe(
      'Pending while it deploys, Ready once it served, Failed with reason and message, or ' +
        'Cancelled.',
    ),
  reason: z.string().optional().describe('When Failed: the machine-readable cause.'),
  message: z.string().optional().describe('When Failed: what went wrong.'),
  live: z.boolean().describe("True on the version that serves now (the app's live_version)."),
  deployed_by: z
    .string()
    .optional()
    .describe('User ID that deployed, rolled back to or reconfigured it; absent on older ones.'),
};

export const listVersions = defineTool({
  name: 'list_versions',
  title: 'List deploy history',
  description:
    "Lists an app's versions (releases), newest first, each with its outcome (Pending, Ready, " +
    'Failed with reason) and its metadata (runtime, env names, egress, ttl); `live` marks the one ' +
    'that serves, which a failed deploy leaves in place. Use it to pick a version for ' +
    'rollback_app. Only the 20 newest versions are kept.',
  input: { app_id: appIdArg },
  output: {
    items: z.array(z.object(versionShape)).describe('The versions, newest first.'),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  async run({ app_id }, { identity, services }) {
    return { items: services.apps.versions(identity, app_id) };
  },
});

const rollbackOutput = {
  ...appShape,
  version: z.number().int().describe('The new version the rollback created at the head.'),
  ...progressShape,
  ...outcomeShape,
};

export const rollbackApp = defineTool({
  name: 'rollback_app',
  title: 'Roll back an app',
  description:
    "Redeploys an earlier version's whole release (source, env, runtime, egress, ttl) as a new " +
    'version at the head of the history (history is never rewritten) and waits up to about 10 s. ' +
    'Use it when a deploy broke the app. Answers like deploy_app: Ready with url, a failure as an ' +
    'error with logs (the version that served keeps serving), else activity and ' +
    'poll_after_seconds: call wait_for_app then. With a progressToken the call stays open until ' +
    'it is live or failed (up to 5 minutes), with progress notifications; cancelling the call ' +
    'cancels the rollback.',
  input: {
    app_id: appIdArg,
    // Any integer, as over HTTP: one not in the history is the service's `unknown_version`.
    version: z.number().int().describe('The version to restore, as list_versions shows it.'),
  },
  output: rollbackOutput,
  annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async run({ app_id, version }, ctx) {
    // Ownership first: another owner's app is not found, and nothing of it is watched.
    ctx.services.apps.get(ctx.identity, app_id);
    const watch = watchDeploy(ctx, app_id, 'deploy');
    const stopCancel = cancelOnAbort(ctx, app_id, watch);
    let outcome;
    try {
      outcome = await ctx.services.apps.rollback(ctx.identity, app_id, version);
      outcome = { ...outcome, app: await followToEnd(ctx, outcome.app, outcome.version) };
    } finally {
      stopCancel();
      watch.stop();
    }
    const step =
      'read logs and message; list_versions shows the versions that served: roll back to ' +
      'another one, or deploy a fix with deploy_app';
    const { report, error } = reportDeploy(ctx, 'rollback_app', outcome, watch, step);
    const view = mcpAppView(outcome.app);
    if (!error) return { ...view, ...report };
    return new ToolFailure(error, { ...withoutLogLines(view), ...report });
  },
});
