import { z } from 'zod';

/** Zod pieces shared by the tools; field names and rules are the HTTP API's (spec §2, §4). */

export const appIdArg = z
  .string()
  .regex(/^[a-z0-9-]{1,63}$/)
  .describe('The app ID, which is the app name given at deploy (list_apps shows yours).');

/** A string, not an enum: a phase added later must not fail clients that validate output. */
export const phaseField = z
  .string()
  .describe(
    'Lifecycle phase: Pending, Claiming, Starting, Ready, Suspended or Failed. Ready: live at url. Pending, Claiming, Starting: on its way (see activity), call wait_for_app. ' +
      'Suspended: idle, wakes on the next request to url. Failed: see reason, message and logs.',
  );

export const reasonField = z
  .string()
  .describe('Short machine-readable code of the Ready condition; a diagnosis only when Failed.');

export const messageField = z
  .string()
  .describe('Human explanation of the Ready condition; when Failed, what went wrong.');

export const urlField = z
  .string()
  .describe('Live URL of the app; only once a version serves (or wakes on the next request).');

export const urlWhenLiveField = z
  .string()
  .describe(
    'The URL the app will have once a version serves; set instead of url while none does. ' +
      'Who may open it is the access field: anyone (public), or only the owner, admins and ' +
      'share-link visitors (private).',
  );

/** A failed call's error, in the structured result of the tools that have one (deploy, rollback). */
export const errorObject = z
  .object({
    code: z.string().describe('Machine-readable error code, e.g. deploy_failed or superseded.'),
    message: z.string().describe('What went wrong, in one line.'),
    next_step: z.string().describe('What to do about it.'),
  })
  .describe('Set when the call failed: what went wrong and what to do next.');

/** What a deploy, rollback or wake that is still going says about itself (app-activity.ts). */
export const activityObject = z
  .object({
    step: z
      .enum(['queued', 'installing', 'building', 'starting', 'health-checking', 'switching'])
      .describe(
        'What it does now: queued (waiting for a sandbox), installing (dependencies), building, ' +
          'starting (until the app process is started), health-checking (until it answers), ' +
          'switching (a redeploy or rollback: the traffic moves to the new release).',
      ),
    since: z.string().describe('ISO 8601 UTC time this step began.'),
    last_line: z
      .string()
      .optional()
      .describe('The newest line of the install or build output, at most 500 characters.'),
  })
  .describe('Only while a deploy, rollback or resume is in flight: what it is doing now.');

/** What a deploy result adds that the app did not ask for (a port rerouted). */
export const warningsField = z
  .array(z.string())
  .optional()
  .describe(
    'Things to fix although the deploy went through, e.g. the app listens on another port ' +
      'than $PORT and Slipway rerouted to it.',
  );

export const progressShape = {
  activity: activityObject.optional(),
  poll_after_seconds: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(
      'With activity: call wait_for_app (or get_app) again after this many seconds at the earliest.',
    ),
  next_step: z
    .string()
    .optional()
    .describe('With activity, in a deploy result: how to keep waiting for it.'),
};

/** How a deploy or a rollback ended when it did not serve: overtaken, or failed with its logs. */
export const outcomeShape = {
  superseded_by: z
    .number()
    .int()
    .optional()
    .describe('Set when a newer deploy came before this version served: that newer version.'),
  logs: z
    .array(z.string())
    .optional()
    .describe(
      'On failure: the last log lines of this version, "<time> <text>", to find the cause.',
    ),
  error: errorObject.optional(),
};

/** An app's access (src/app-hosts/app-access.ts). */
export const accessField = z.enum(['public', 'private']);

/** The spec's App resource, as GET /v1/apps/{id} returns it (src/services/app-view.ts). */
export const appShape = {
  app_id: z.string().describe('App ID; equals the name.'),
  name: z.string().describe('URL-safe name; also the subdomain of url.'),
  owner: z.string().describe('User ID of the owner (e.g. apikey-<name>).'),
  phase: phaseField,
  url: urlField.optional(),
  url_when_live: urlWhenLiveField.optional(),
  runtime: z
    .object({
      lane: z.string().describe('fast (vendored, no install step) or general (install, slower).'),
      template: z.string().describe('Runner chosen for the source: static, node or python.'),
      build: z.string().optional().describe('The runtime.build command the app was built with.'),
    })
    .describe('How the app runs.'),
  last_deployed_at: z.string().describe('ISO 8601 UTC time of the last deploy.'),
  reason: reasonField,
  message: messageField,
  live_version: z
    .number()
    .int()
    .nullable()
    .describe(
      'The version that serves (or wakes on the next request); null when nothing can serve. A ' +
        'failed redeploy leaves it unchanged.',
    ),
  last_deploy: z
    .object({
      version: z.number().int().describe('The version the newest deploy or rollback created.'),
      outcome: z
        .string()
        .describe(
          'Pending while it runs, Ready once it served, Failed, or Cancelled (cancel_deploy, ' +
            'or the deploy call was cancelled).',
        ),
      reason: z.string().optional().describe('When Failed: the machine-readable cause.'),
      message: z.string().optional().describe('When Failed: what went wrong.'),
    })
    .nullable()
    .describe(
      'How the newest deploy or rollback went; a failure here may leave live_version serving.',
    ),
  env: z
    .array(z.object({ name: z.string() }))
    .describe('Names of the env variables of the newest deploy; values are never returned.'),
  access: accessField.describe(
    'public: anyone with the URL opens it; private: only the owner (bearer token), admins and ' +
      'visitors let in by a share link.',
  ),
  ...progressShape,
};

export const appObject = z.object(appShape);
