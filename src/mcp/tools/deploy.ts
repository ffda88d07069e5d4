import { z } from 'zod';
import { AppError } from '../../errors.js';
import type { AppRecord } from '../../persistence/store.js';
import { validateMetadata } from '../../services/deploy-metadata.js';
import { APP_NAME, APP_NAME_MAX } from '../../sources/app-name.js';
import { LANES, TEMPLATES } from '../../sources/classify.js';
import {
  cancelOnAbort,
  followToEnd,
  laneOf,
  reportDeploy,
  watchDeploy,
} from '../deploy-outcome.js';
import { decodeTarball, packFiles, topFolderOf } from '../pack-files.js';
import {
  accessField,
  messageField,
  outcomeShape,
  phaseField,
  progressShape,
  reasonField,
  urlField,
  urlWhenLiveField,
  warningsField,
} from '../schemas.js';
import { defineTool, ToolFailure } from '../tool.js';

/** The rule as POST /v1/deploy words it, so a refusal reads the same from either door. */
const NAME_RULE =
  'must be lowercase letters, digits and "-", starting and ending with a letter or digit';

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
  url_when_live: urlWhenLiveField.optional(),
  reason: reasonField,
  message: messageField,
  version: z
    .number()
    .int()
    .optional()
    .describe('Version number this deploy created in the history (see list_versions).'),
  access: accessField
    .optional()
    .describe('Who may open the URL: public (anyone) or private (you and share-link visitors).'),
  lane: z
    .string()
    .optional()
    .describe('Lane of this version: fast (runs as is) or general (installs and builds first).'),
  live_version: z
    .number()
    .int()
    .optional()
    .describe('The version that serves now; on a failed redeploy, the earlier one still serving.'),
  warnings: warningsField,
  ...progressShape,
  ...outcomeShape,
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
    'served keeps serving (live_version says which). A slower deploy (an install or build on the ' +
    'general lane) answers with activity and poll_after_seconds: call wait_for_app then. With a ' +
    'progressToken the call stays open until the app is live or failed (up to 5 minutes), with ' +
    'progress notifications carrying the activity and the build log lines; cancelling the call ' +
    '(notifications/cancelled) cancels the deploy, and the version that served keeps serving. ' +
    'warnings says when the app ignored $PORT and Slipway rerouted to the port it listens on.',
  input: {
    name: z
      .string()
      .min(1, 'name is required')
      .max(APP_NAME_MAX, `name must be at most ${APP_NAME_MAX} characters`)
      .regex(APP_NAME, `name ${NAME_RULE}`)
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
          .enum(LANES, { error: `runtime.lane must be one of ${LANES.join(', ')}` })
          .optional()
          .describe('fast: run as is; general: run an install/build step first (slower).'),
        template: z
          .enum(TEMPLATES, { error: `runtime.template must be one of ${TEMPLATES.join(', ')}` })
          .optional()
          .describe('Force a runner: static, node or python.'),
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
      .describe(
        'Overrides of what Slipway detects from the file names; usually omitted. Omitted on a ' +
          'redeploy: the overrides the live version was deployed with; {} for none.',
      ),
    env: z
      .array(
        z.strictObject({
          name: z.string().describe('Variable name, e.g. API_URL.'),
          value: z.string().describe('Its value.'),
        }),
      )
      .optional()
      .describe(
        'Environment variables for the app. PORT and proxy variables are set by Slipway. ' +
          "Omitted: a redeploy keeps the live version's env; [] clears it. update_app changes " +
          'it without sending the source.',
      ),
    egress: z
      .strictObject({
        allowed_hosts: z
          .array(z.string())
          .optional()
          .describe('Hosts the app may reach, e.g. "api.example.com" or "*.example.com".'),
      })
      .optional()
      .describe(
        "Outbound network access. Omitted: a new app has none, a redeploy keeps the live version's.",
      ),
    ttl: z
      .string()
      .optional()
      .describe(
        'Idle time before the app is suspended, e.g. "30m" (default) or "2h"; omitted, a ' +
          "redeploy keeps the live version's.",
      ),
    access: accessField
      .optional()
      .describe(
        'public: anyone with the URL opens the app. private: only you (with your token) and ' +
          'people you give a share link (create_share_link) get in. Omitted: a new app gets the ' +
          "server's default (usually public), a redeploy keeps the app's current access.",
      ),
  },
  output,
  annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async run(args, ctx) {
    const { name, runtime, env, egress, ttl, access } = args;
    // The validator of POST /v1/deploy, on the same field names: same codes, same messages.
    const metadata = validateMetadata({ name, runtime, env, egress, ttl, access });
    const source = await sourceOf(args, ctx.services.maxSourceBytes);
    const watch = watchDeploy(ctx, name, 'deploy');
    const stopCancel = cancelOnAbort(ctx, name, watch);
    let outcome: { app: AppRecord; version: number };
    try {
      outcome = await ctx.services.apps.deploy(ctx.identity, metadata, source);
      outcome = { ...outcome, app: await followToEnd(ctx, outcome.app, outcome.version) };
    } finally {
      stopCancel();
      watch.stop();
    }
    const folder = args.files === undefined ? undefined : topFolderOf(args.files);
    const step =
      folder === undefined
        ? 'read logs and message, fix the files and call deploy_app again'
        : `every file is under "${folder}/", but Slipway looks for package.json, index.html or ` +
          `app.py at the root: drop the "${folder}/" prefix from the keys of files and call ` +
          'deploy_app again';
    const { report, error } = reportDeploy(ctx, 'deploy_app', outcome, watch, step);
    const result: Output = { app_id: outcome.app.id, ...report };
    if (!watch.deleted) result.access = outcome.app.access ?? 'public';
    // A deleted app has no versions left to read the lane from.
    const lane = watch.deleted ? undefined : laneOf(ctx, outcome.app.id, outcome.version);
    if (lane !== undefined) result.lane = lane;
    return error ? new ToolFailure(error, result) : result;
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
