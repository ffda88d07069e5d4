import { z } from 'zod';
import { mcpAppView } from '../app-view.js';
import { appIdArg, appShape } from '../schemas.js';
import { defineTool } from '../tool.js';

/** The tools of a deploy in flight: wait for its next step, or cancel it. */

/** The longest a wait_for_app call holds (README: MCP, Waiting). */
export const WAIT_MAX_SECONDS = 60;
const WAIT_DEFAULT_SECONDS = 30;

export const waitForApp = defineTool({
  name: 'wait_for_app',
  title: 'Wait for an app to change',
  description:
    'Waits until the app is no longer where you last saw it: its phase, or the step of its ' +
    'activity (queued, installing, building, starting, ...), changes; or timeout_seconds pass. ' +
    'Returns the app as get_app does, with changed saying whether anything did. Use it instead ' +
    'of polling get_app while a deploy, rollback or resume is in flight; call it again until ' +
    'phase is Ready (url set) or Failed.',
  input: {
    app_id: appIdArg,
    phase: z.string().optional().describe('The phase you last saw; omitted: the phase now.'),
    step: z
      .string()
      .optional()
      .describe(
        'The activity step you last saw ("" for none); omitted: the step now. With phase, ' +
          'a change that came between two calls is not missed.',
      ),
    timeout_seconds: z
      .number()
      .int()
      .min(1)
      .max(WAIT_MAX_SECONDS)
      .optional()
      .describe(
        `How long to wait at most, 1-${WAIT_MAX_SECONDS} s; default ${WAIT_DEFAULT_SECONDS}.`,
      ),
  },
  output: {
    ...appShape,
    changed: z
      .boolean()
      .describe('True when the phase or step changed; false when the wait timed out.'),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  async run({ app_id, phase, step, timeout_seconds }, ctx) {
    const { apps, registry } = ctx.services;
    const before = apps.get(ctx.identity, app_id);
    const seen = {
      phase: phase ?? registry.phase(before.id) ?? before.phase,
      step: step === undefined ? registry.activity(before.id)?.step : step || undefined,
    };
    const waitMs = (timeout_seconds ?? WAIT_DEFAULT_SECONDS) * 1000;
    const changed = await registry.awaitChange(before.id, seen, { waitMs, cut: ctx.signal });
    // Deleted meanwhile: the answer is the usual not found.
    const app = apps.get(ctx.identity, app_id);
    return { ...mcpAppView(app, registry.activity(app.id)), changed };
  },
});

export const cancelDeploy = defineTool({
  name: 'cancel_deploy',
  title: 'Cancel a deploy in flight',
  description:
    'Cancels the deploy, rollback or config release of the app that is still in flight ' +
    '(queued, installing, building or starting): it is recorded Cancelled and the version that ' +
    'served keeps serving. Fails with nothing_to_cancel when none is in flight. Cancelling a ' +
    'deploy_app call that carried a progressToken does the same.',
  input: { app_id: appIdArg },
  output: appShape,
  annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async run({ app_id }, { identity, services }) {
    const app = services.apps.cancel(identity, app_id);
    return mcpAppView(app, services.registry.activity(app.id));
  },
});
