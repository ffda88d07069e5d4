import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { PlatformInfo } from '../../services/platform-info.js';
import { defineTool, type McpServices } from '../tool.js';

/** get_platform_info and the slipway://platform resource: GET /v1/templates, for agents. */

export const PLATFORM_URI = 'slipway://platform';

const availability = {
  available: z.boolean().describe('Whether deploys can use it on this server.'),
  reason: z.string().optional().describe('When not available: why.'),
};

const output = {
  backend: z.string().describe('The runtime backend of this server, e.g. local.'),
  templates: z
    .array(
      z.object({
        name: z.string().describe('static, node or python (runtime.template of deploy_app).'),
        ...availability,
        lanes: z
          .array(z.object({ name: z.string().describe('fast or general.'), ...availability }))
          .describe('fast runs the source as is; general installs and builds it first.'),
      }),
    )
    .describe('The templates, each with its lanes and whether they are available here.'),
  runtimes: z
    .record(z.string(), z.string())
    .describe('Versions of the runtimes apps run on, e.g. node and python.'),
  limits: z
    .object({
      maxSourceBytes: z.number().int().describe('Largest source, packed and gzipped, in bytes.'),
      maxUnpackedBytes: z.number().int().describe('Largest source once unpacked, in bytes.'),
      maxEntries: z.number().int().describe('Most files and folders in one source.'),
      maxAppsPerOwner: z
        .number()
        .int()
        .describe('Most apps one non-admin owner may have; 0: no limit. Admins have none.'),
      maxSandboxMemoryMBPerOwner: z
        .number()
        .int()
        .describe(
          "Sandbox memory a non-admin owner's apps may hold, in MB, one sandbox per app; 0: no limit.",
        ),
      maxAppsPerDepartment: z.number().int().describe('Most apps per department; 0: no limit.'),
    })
    .describe('Limits of this server.'),
  names: z
    .object({
      pattern: z.string().describe('Regular expression an app name must match.'),
      maxLength: z.number().int().describe('Longest app name.'),
    })
    .describe('What a deploy_app name may be.'),
  apps: z
    .object({
      domain: z.string().describe('The domain app URLs are under.'),
      urlPattern: z.string().describe('An app URL, with {name} in place of the app name.'),
      defaultTtl: z.string().describe('Idle time before an app is suspended, unless ttl says.'),
    })
    .describe('Where apps live.'),
  app_urls: z.string().describe('Who can open an app at its URL.'),
  waiting: z.string().describe('How to wait for a deploy that takes longer than its call.'),
};

const APP_URLS =
  "It depends on the app's access (deploy_app's or update_app's access, get_app shows it). " +
  'public: anyone who has the URL opens the app. private: only its owner (with their token), ' +
  'admins, and visitors a share link (create_share_link, with an optional password) lets in. ' +
  "A new app gets this server's default access unless the deploy names one.";

const WAITING =
  'deploy_app, rollback_app, update_app and resume_app wait about 10 s. A slower deploy (an ' +
  'install or build on the general lane) answers with phase, activity (step: queued, ' +
  'installing, building, starting, health-checking or switching; since; last_line) and ' +
  'poll_after_seconds: call wait_for_app, which answers as soon as the phase or the step ' +
  'changes, until phase is Ready (url set) or Failed (reason, message, get_app_logs). Or send ' +
  'a progressToken in the call: it stays open until the app is live or failed (up to 5 ' +
  'minutes), with progress notifications carrying the activity and the build log lines. ' +
  'Cancelling that call (notifications/cancelled) cancels the deploy; so does cancel_deploy. ' +
  'A cancelled deploy is recorded Cancelled and the version that served keeps serving.';

type Output = z.output<z.ZodObject<typeof output>>;

/** The platform as agents read it: the data of GET /v1/templates, plus what it means for them. */
export function platformView(info: PlatformInfo): Output {
  return { ...info, app_urls: APP_URLS, waiting: WAITING };
}

export const getPlatformInfo = defineTool({
  name: 'get_platform_info',
  title: 'What this platform runs',
  description:
    'Returns what this server can run: templates (static, node, python) and their lanes, which ' +
    'are available here and why not, runtime versions, size and name limits, the app URL ' +
    'pattern, who may open an app URL (its access), and how to wait for a slow deploy. Call it before a ' +
    `first deploy_app instead of guessing. Also readable as the resource ${PLATFORM_URI}.`,
  input: {},
  output,
  annotations: { readOnlyHint: true, openWorldHint: false },
  async run(_args, { services }) {
    return platformView(services.platform());
  },
});

/** The same data as a resource, for clients that read context rather than call tools. */
export function registerPlatformResource(server: McpServer, services: McpServices): void {
  server.registerResource(
    'platform',
    PLATFORM_URI,
    {
      title: 'What this platform runs',
      description: 'The same as the get_platform_info tool: templates, lanes, limits, URLs.',
      mimeType: 'application/json',
    },
    async (uri) => ({
      contents: [
        {
          uri: uri.href,
          mimeType: 'application/json',
          text: JSON.stringify(platformView(services.platform())),
        },
      ],
    }),
  );
}
