import { logLineText, SNAPSHOT_LINES } from '../../actors/log-ring.js';
import { z } from 'zod';
import type { AppRegistry } from '../../actors/registry.js';
import { appIdArg } from '../schemas.js';
import { defineTool } from '../tool.js';

/** As many lines as a failed POST /v1/deploy carries in its error details. */
export const FAILURE_LOG_LINES = 20;

/**
 * The app's last `count` log lines (of one version, when given) from the source
 * GET /v1/apps/{id}/logs reads, in its format: `<ISO 8601 time> <text>`.
 */
export function lastLogLines(
  registry: AppRegistry,
  appId: string,
  count: number,
  version?: number,
): string[] {
  return registry.logs(appId, version).slice(-count).map(logLineText);
}

export const getAppLogs = defineTool({
  name: 'get_app_logs',
  title: 'Read app logs',
  description:
    "Returns the app's most recent log lines (stdout, stderr and Slipway's own notes, which " +
    'start with "[slipway]": starting, serving, failed, rolled back, suspended, woke), oldest ' +
    'first. Use it to see why an app or a deploy failed, or why it crashes. Pass `version` to ' +
    'read only the lines of one version (as list_versions numbers them). A snapshot, not a stream.',
  input: {
    app_id: appIdArg,
    limit: z
      .number()
      .int()
      .min(1)
      .max(SNAPSHOT_LINES)
      .optional()
      .describe(`Most recent lines to return, 1-${SNAPSHOT_LINES}; default ${SNAPSHOT_LINES}.`),
    version: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe('Only the lines of this version (its output and Slipway notes about it).'),
  },
  output: {
    app_id: z.string().describe('The app the lines belong to.'),
    lines: z
      .array(z.string())
      .describe('Log lines, oldest first, each "<ISO 8601 time> <text>"; empty when none.'),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  async run({ app_id, limit, version }, { identity, services }) {
    // Ownership first: another owner's app is not found, and its logs are never read.
    services.apps.get(identity, app_id);
    const count = limit ?? SNAPSHOT_LINES;
    return { app_id, lines: lastLogLines(services.registry, app_id, count, version) };
  },
});
