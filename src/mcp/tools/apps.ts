import { z } from 'zod';
import { mcpAppView } from '../app-view.js';
import type { AppSummary } from '../../persistence/store.js';
import { followToEnd, watchDeploy } from '../deploy-outcome.js';
import { appIdArg, appObject, appShape, progressShape } from '../schemas.js';
import { defineTool } from '../tool.js';

/** The app tools: the MCP twins of GET/DELETE /v1/apps* and the suspend and resume routes. */

export const listApps = defineTool({
  name: 'list_apps',
  title: 'List my apps',
  description:
    'Lists the apps you own (all apps for an admin), with phase and live URL. Use it to find an ' +
    'app_id or to see what is deployed. limit and offset page the list; total counts them all.',
  input: {
    limit: z
      .number()
      .int()
      .min(0)
      .max(10_000)
      .optional()
      .describe('Most apps to return; omitted or 0 returns all.'),
    offset: z.number().int().min(0).optional().describe('Apps to skip before the page; default 0.'),
  },
  output: {
    items: z.array(appObject).describe('The apps of this page.'),
    total: z.number().int().describe('Every app you can see, not only this page.'),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  async run({ limit, offset }, { identity, services }) {
    const page = services.apps.list(identity, { limit, offset });
    const view = (app: AppSummary) => mcpAppView(app, services.registry.activity(app.id));
    return { items: page.items.map(view), total: page.total };
  },
});

export const getApp = defineTool({
  name: 'get_app',
  title: 'Get an app',
  description:
    'Returns one app: its phase, live URL (once a version serves), the version that serves ' +
    '(live_version), how the newest deploy went (last_deploy) and, while a deploy, rollback or ' +
    'resume is in flight, what it does now (activity) and poll_after_seconds. To wait for a ' +
    'deploy still going, wait_for_app is better than polling this; use it to see why an app is ' +
    'Failed.',
  input: { app_id: appIdArg },
  output: appShape,
  annotations: { readOnlyHint: true, openWorldHint: false },
  async run({ app_id }, { identity, services }) {
    const app = services.apps.summary(identity, app_id);
    return mcpAppView(app, services.registry.activity(app.id));
  },
});

export const deleteApp = defineTool({
  name: 'delete_app',
  title: 'Delete an app',
  description:
    'Deletes an app: its URL stops answering, its sandbox is reaped and its stored sources and ' +
    'history are removed. This cannot be undone; deploy again to bring it back.',
  input: { app_id: appIdArg },
  output: {
    app_id: z.string().describe('The deleted app.'),
    deleted: z.literal(true).describe('Always true: the app is gone.'),
  },
  annotations: { destructiveHint: true, idempotentHint: false, openWorldHint: false },
  async run({ app_id }, { identity, services }) {
    await services.apps.delete(identity, app_id);
    return { app_id, deleted: true as const };
  },
});

export const suspendApp = defineTool({
  name: 'suspend_app',
  title: 'Suspend an app',
  description:
    'Suspends an app now instead of waiting for its idle ttl: its sandbox is reaped and it uses ' +
    'no resources. The next request to its URL, or resume_app, wakes it.',
  input: { app_id: appIdArg },
  output: appShape,
  annotations: { destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run({ app_id }, { identity, services }) {
    return mcpAppView(await services.apps.suspend(identity, app_id));
  },
});

export const resumeApp = defineTool({
  name: 'resume_app',
  title: 'Resume an app',
  description:
    'Wakes a Suspended app and waits up to about 10 s for it to be Ready; returns the app. ' +
    'Use it to warm an app before sending traffic; a request to its URL also wakes it. With a ' +
    'progressToken the call stays open until it is Ready or failed (up to 5 minutes), with ' +
    'progress notifications; if it is still waking, call wait_for_app.',
  input: { app_id: appIdArg },
  output: { ...appShape, ...progressShape },
  annotations: { destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run({ app_id }, ctx) {
    // Ownership first: another owner's app is not found, and nothing of it is watched.
    ctx.services.apps.get(ctx.identity, app_id);
    const watch = watchDeploy(ctx, app_id, 'resume');
    try {
      const woken = await ctx.services.apps.resume(ctx.identity, app_id);
      const app = await followToEnd(ctx, woken, undefined);
      return mcpAppView(app, ctx.services.registry.activity(app.id));
    } finally {
      watch.stop();
    }
  },
});
