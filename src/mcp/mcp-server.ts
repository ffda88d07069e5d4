import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Tool, ToolContext } from './tool.js';
import { deleteApp, getApp, listApps, resumeApp, suspendApp } from './tools/apps.js';
import { deployApp } from './tools/deploy.js';
import { listVersions, rollbackApp } from './tools/history.js';
import { getAppLogs } from './tools/logs.js';
import { getPlatformInfo, PLATFORM_URI, registerPlatformResource } from './tools/platform.js';
import { createShareLink, listShareLinks, revokeShareLink } from './tools/share.js';
import { updateApp } from './tools/update.js';
import { cancelDeploy, waitForApp } from './tools/wait.js';

/** Every tool, in the order tools/list shows them. */
export const TOOLS: readonly Tool[] = [
  deployApp,
  listApps,
  getApp,
  waitForApp,
  cancelDeploy,
  updateApp,
  getAppLogs,
  deleteApp,
  suspendApp,
  resumeApp,
  listVersions,
  rollbackApp,
  createShareLink,
  listShareLinks,
  revokeShareLink,
  getPlatformInfo,
];

/**
 * design.md §6 allows 10,000 entries in a source; a `files` map of that many objects (three
 * elements each), plus env and hosts, is the most a legitimate call needs. The SDK refuses larger
 * arguments before parsing them.
 */
const MAX_TOOL_INPUT_ELEMENTS = 40_000;

const INSTRUCTIONS =
  'Slipway deploys web apps from source and gives each a live URL. get_platform_info (or the ' +
  `resource ${PLATFORM_URI}) says what this server runs. deploy_app takes the files of an app ` +
  'and answers within about 10 s; when it fails, its result carries reason, message and the ' +
  'last log lines: fix the files and deploy again. A slower deploy answers with activity and ' +
  'poll_after_seconds: call wait_for_app until it is live; or send a progressToken to keep the ' +
  'call open until then, with progress notifications. cancel_deploy (or cancelling the call) ' +
  'stops a deploy in flight; the version that served keeps serving. ' +
  'A redeploy keeps the env, egress and ttl it does not name; update_app changes them (and ' +
  'access) without sending the source again. ' +
  "Apps are yours alone: other users' apps do not exist for you. Who may open an app's URL is " +
  'its access: public (anyone) or private (you, admins and share-link visitors).';

/** One server per request (stateless transport): it acts as that request's caller only. */
export function buildMcpServer(ctx: ToolContext, version: string): McpServer {
  const server = new McpServer(
    { name: 'slipway', title: 'Slipway', version },
    {
      capabilities: { tools: {}, resources: {} },
      instructions: INSTRUCTIONS,
      maxToolInputElements: MAX_TOOL_INPUT_ELEMENTS,
    },
  );
  for (const tool of TOOLS) tool.register(server, ctx);
  registerPlatformResource(server, ctx.services);
  // Registering a tool or resource makes the SDK advertise `listChanged: true`, a promise of
  // notifications when the lists change. A stateless server has no stream to send them on, and
  // its lists never change: the key is dropped (undefined does not survive JSON).
  server.server.registerCapabilities({
    tools: { listChanged: undefined },
    resources: { listChanged: undefined },
  });
  return server;
}
