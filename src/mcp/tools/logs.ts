import { logLineText } from '../../actors/log-ring.js';
import { z } from 'zod';
import type { AppRegistry } from '../../actors/registry.js';
import { SNAPSHOT_LINES } from '../../http/logs-routes.js';
import { appIdArg } from '../schemas.js';
import { defineTool } from '../tool.js';

/** As many lines as a failed POST /v1/deploy carries in its error details. */
export const FAILURE_LOG_LINES = 20;

/**
 * The app's last `count` log lines from the source GET /v1/apps/{id}/logs reads, in its format:
 * `<ISO 8601 time> <text>`.
 */
export function lastLogLines(registry: AppRegistry, appId: string, count: number): string[] {
  return registry.logs(appId).slice(-count).map(logLineText);
}

export const getAppLogs = defineTool({
  name: 'get_app_logs',
  title: 'Read app logs',
  description:
    "Returns the app's most recent log lines (stdout, stderr and Slipway's own notes), oldest " +
    'first. Use it to see why an app is Failed, crashing or misbehaving. A snapshot, not a stream.',
  input: {
    app_id: appIdArg,
    limit: z
      .number()
      .int()
      .min(1)
      .max(SNAPSHOT_LINES)
      .optional()
      .describe(`Most recent lines to return, 1-${SNAPSHOT_LINES}; default ${SNAPSHOT_LINES}.`),
  },
  output: {
    app_id: z.string().describe('The app the lines belong to.'),
    lines: z
      .array(z.string())
      .describe('Log lines, oldest first, each "<ISO 8601 time> <text>"; empty when none.'),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  async run({ app_id, limit }, { identity, services }) {
    // Ownership first: another owner's app is not found, and its logs are never read.
    services.apps.get(identity, app_id);
    return { app_id, lines: lastLogLines(services.registry, app_id, limit ?? SNAPSHOT_LINES) };
  },
});
