import { z } from 'zod';
import { AppError } from '../../errors.js';
import { deployFailure } from '../../services/deploy-failure.js';
import { validateMetadata } from '../../services/deploy-metadata.js';
import { decodeTarball, packFiles } from '../pack-files.js';
import { messageField, phaseField, reasonField, urlField } from '../schemas.js';
import { defineTool, ToolFailure } from '../tool.js';
import { FAILURE_LOG_LINES, lastLogLines } from './logs.js';

const fileContent = z.union([
  z.string().describe('The file content as UTF-8 text.'),
  z
    .strictObject({
      content: z.string().describe('The file content, encoded as `encoding` says.'),
      encoding: z
        .enum(['utf8', 'base64'])
        .optional()
        .describe('utf8 (default) for text; base64 for binary files such as images.'),
    })
    .describe('The file content with its encoding.'),
]);

const output = {
  app_id: z.string().describe('The app ID (its name); pass it to the other tools.'),
  phase: phaseField,
  url: urlField.optional(),
  reason: reasonField,
  message: messageField,
  version: z
    .number()
    .int()
    .optional()
    .describe('Version number this deploy created in the history (see list_versions).'),
  live_version: z
    .number()
    .int()
    .optional()
    .describe(
      'On a failed redeploy: the earlier version that is still serving (phase stays Ready).',
    ),
  logs: z
    .array(z.string())
    .optional()
    .describe('On failure: the last log lines of the app, "<time> <text>", to find the cause.'),
};
type Output = z.output<z.ZodObject<typeof output>>;

export const deployApp = defineTool({
  name: 'deploy_app',
  title: 'Deploy an app',
  description:
    'Deploys source code as a live web app at its own URL, or redeploys an app you own as a new ' +
    'version. Send the source as `files` (path → content) or `tarball_base64`. Static sites need ' +
    'an index.html; node apps a package.json with "main" (or server.js at the root); python apps ' +
    'app.py, main.py or server.py. Apps must listen on the PORT environment variable. Waits up to ' +
    'about 10 s: phase Ready comes with url; a failure comes as an error with reason, message and ' +
    'logs to fix and deploy again. A failed redeploy never takes the app down: the version that ' +
    'served keeps serving (live_version says which). Any other phase means still starting: poll ' +
    'get_app.',
  input: {
    name: z
      .string()
      .describe(
        'App name: lowercase letters, digits and "-", 1-63 characters, starting and ending ' +
          'with a letter or digit. Becomes the app_id and the subdomain of the URL.',
      ),
    files: z
      .record(z.string(), fileContent)
      .optional()
      .describe(
        'The source as a map of relative path (e.g. "src/index.js") to content. Packed into a ' +
          'tarball in sorted order; no absolute paths or "..". Use this or tarball_base64.',
      ),
    tarball_base64: z
      .string()
      .optional()
      .describe('The source as a base64-encoded gzipped tarball (at most 50 MB). Or use files.'),
    runtime: z
      .strictObject({
        lane: z
          .enum(['fast', 'general'])
          .optional()
          .describe('fast: run as is; general: run an install/build step first (slower).'),
        template: z.string().optional().describe('Force a runner: static, node or python.'),
        entrypoint: z.string().optional().describe('Relative path of the file to run.'),
        build: z
          .string()
          .optional()
          .describe(
            'Shell command that builds the app, run with sh -c in the source directory after the ' +
              'install, instead of npm run build (e.g. "npx vite build --outDir out"); implies ' +
              'the general lane. One line, at most 1,000 characters.',
          ),
      })
      .optional()
      .describe('Overrides of what Slipway detects from the file names; usually omitted.'),
    env: z
      .array(
        z.strictObject({
          name: z.string().describe('Variable name, e.g. API_URL.'),
          value: z.string().describe('Its value.'),
        }),
      )
      .optional()
      .describe('Environment variables for the app. PORT and proxy variables are set by Slipway.'),
    egress: z
      .strictObject({
        allowed_hosts: z
          .array(z.string())
          .optional()
          .describe('Hosts the app may reach, e.g. "api.example.com" or "*.example.com".'),
      })
      .optional()
      .describe('Outbound network access; omitted or empty means none.'),
    ttl: z
      .string()
      .optional()
      .describe('Idle time before the app is suspended, e.g. "30m" (default) or "2h".'),
  },
  output,
  annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async run(args, ctx) {
    const { name, runtime, env, egress, ttl } = args;
    // The validator of POST /v1/deploy, on the same field names: same codes, same messages.
    const metadata = validateMetadata({ name, runtime, env, egress, ttl });
    const source = await sourceOf(args, ctx.services.maxSourceBytes);
    const { app, version } = await ctx.services.apps.deploy(ctx.identity, metadata, source);
    const logs = lastLogLines(ctx.services.registry, app.id, FAILURE_LOG_LINES, version);
    const failed = deployFailure(app, version, logs);
    if (failed) return failure(failed, version);
    const result: Output = {
      app_id: app.id,
      phase: app.phase,
      reason: app.reason,
      message: app.message,
      version,
    };
    if (app.phase === 'Ready' && app.url) result.url = app.url;
    return result;
  },
});

async function sourceOf(
  args: { files?: Parameters<typeof packFiles>[0]; tarball_base64?: string },
  maxBytes: number,
): Promise<Buffer> {
  if (args.files !== undefined && args.tarball_base64 !== undefined) {
    throw new AppError(400, 'bad_request', 'send the source as files or tarball_base64, not both');
  }
  if (args.files !== undefined) return packFiles(args.files, maxBytes);
  if (args.tarball_base64 !== undefined) return decodeTarball(args.tarball_base64, maxBytes);
  throw new AppError(400, 'missing_source', 'the source is required: send files or tarball_base64');
}

/** The deploy_failed error body as text, and the same diagnosis in the tool's output shape. */
function failure(error: AppError, version?: number): ToolFailure<Output> {
  const details = error.details ?? {};
  const text = (key: string): string => (typeof details[key] === 'string' ? details[key] : '');
  // A version refused before any sandbox existed has only Slipway's note about it, if that.
  const logs = Array.isArray(details.logs) ? details.logs.map(String) : [];
  const structured: Output = {
    app_id: text('app_id'),
    // Ready when an earlier version still serves (blue/green), else Failed.
    phase: text('phase') || 'Failed',
    reason: text('reason'),
    message: text('message'),
    logs,
  };
  if (version !== undefined) structured.version = version;
  if (typeof details.live_version === 'number') structured.live_version = details.live_version;
  return new ToolFailure(error, structured);
}
