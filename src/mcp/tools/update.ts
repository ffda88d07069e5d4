import { z } from 'zod';
import { mcpAppView, withoutLogLines } from '../app-view.js';
import { cancelOnAbort, followToEnd, reportDeploy, watchDeploy } from '../deploy-outcome.js';
import { accessField, appIdArg, appShape, outcomeShape, progressShape } from '../schemas.js';
import { defineTool, ToolFailure } from '../tool.js';

/** The MCP twin of PATCH /v1/apps/{id}: access, env, ttl and egress without sending source. */

const output = {
  ...appShape,
  version: z
    .number()
    .int()
    .optional()
    .describe('Set when env, ttl or egress changed: the version the config release created.'),
  ...progressShape,
  ...outcomeShape,
};

export const updateApp = defineTool({
  name: 'update_app',
  title: "Change an app's settings",
  description:
    'Changes an app you own without sending its source again. access takes effect at once. env ' +
    '(set or unset variables by name), ttl and egress make a config release: a new version of ' +
    'the live source with the new settings, switched to like any deploy (the version that ' +
    'served keeps serving if it fails); it answers like deploy_app, with activity and ' +
    'poll_after_seconds while it is still going. Env values are write-only: no tool shows them ' +
    'again. Variables the call does not name keep their values; rollback_app restores an ' +
    "earlier version's settings.",
  input: {
    app_id: appIdArg,
    access: accessField
      .optional()
      .describe(
        'public: anyone with the URL opens the app. private: only you (with your token) and ' +
          'people you give a share link get in.',
      ),
    env: z
      .strictObject({
        set: z
          .array(
            z.strictObject({
              name: z.string().describe('Variable name, e.g. API_URL.'),
              value: z.string().describe('Its new value; never shown again.'),
            }),
          )
          .optional()
          .describe('Variables to add, or whose value to replace.'),
        unset: z
          .array(z.string())
          .optional()
          .describe('Names of variables to remove; each must be set now.'),
      })
      .optional()
      .describe('Changes to the env, by name; the variables not named keep their values.'),
    ttl: z
      .string()
      .optional()
      .describe('New idle time before the app is suspended, e.g. "30m" or "2h".'),
    egress: z
      .strictObject({
        allowed_hosts: z
          .array(z.string())
          .describe('Every host the app may reach from now on; [] for none.'),
      })
      .optional()
      .describe('Replaces the outbound hosts the app may reach.'),
  },
  output,
  annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async run({ app_id, ...settings }, ctx) {
    const given = Object.fromEntries(Object.entries(settings).filter(([, v]) => v !== undefined));
    // Ownership first: another owner's app is not found, and nothing of it is watched.
    ctx.services.apps.get(ctx.identity, app_id);
    const { env, ttl, egress } = settings;
    if (env === undefined && ttl === undefined && egress === undefined) {
      return mcpAppView((await ctx.services.apps.update(ctx.identity, app_id, given)).app);
    }
    const watch = watchDeploy(ctx, app_id, 'deploy');
    const stopCancel = cancelOnAbort(ctx, app_id, watch);
    let outcome;
    try {
      outcome = await ctx.services.apps.update(ctx.identity, app_id, given);
      if (outcome.version !== undefined) {
        outcome = { ...outcome, app: await followToEnd(ctx, outcome.app, outcome.version) };
      }
    } finally {
      stopCancel();
      watch.stop();
    }
    const { app, version } = outcome;
    // Settings that were already these: nothing was released.
    if (version === undefined) return mcpAppView(app);
    const step =
      'read logs and message: the new settings broke the app; call update_app with other ' +
      'values, or rollback_app to a version that served';
    const { report, error } = reportDeploy(ctx, 'update_app', { app, version }, watch, step);
    const view = mcpAppView(app);
    if (!error) return { ...view, ...report };
    return new ToolFailure(error, { ...withoutLogLines(view), ...report });
  },
});
