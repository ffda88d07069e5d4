import type { SourceInfo } from './tarball.js';
import { detectors, planners, type Lane, type Template } from './templates.js';

export type { Lane, Template } from './templates.js';

export const TEMPLATES: readonly Template[] = ['node', 'python', 'static'];
export const LANES: readonly Lane[] = ['fast', 'general'];

/** The metadata's `runtime` object: each field, when set, overrides what the files suggest. */
export interface ClassifyOverride {
  lane?: string;
  template?: string;
  entrypoint?: string;
  /** A build command: the source builds like one with a `build` script, on the general lane. */
  build?: string;
}

/** What this Slipway can run; a plan outside it fails instead of failing later in a sandbox. */
export interface ClassifyOptions {
  lanes?: readonly string[];
  templates?: readonly string[];
}

export type FailureReason =
  'NoEntrypoint' | 'UnknownTemplate' | 'UnknownLane' | 'TemplateUnavailable' | 'LaneUnavailable';

/**
 * A source Slipway cannot run is not a bad request: the deploy is recorded and fails before any
 * sandbox exists, with `reason`/`message` as its only diagnosis (spec §2). So this never throws.
 */
export type Classification =
  | { ok: true; lane: Lane; template: Template; entrypoint: string; why: string }
  | { ok: false; reason: FailureReason; message: string };

/**
 * Chooses template, entrypoint and lane from file names (and the root package.json), honouring
 * overrides. Precedence when several templates fit: node, then python, then static.
 */
export function classify(
  info: SourceInfo,
  override: ClassifyOverride = {},
  options: ClassifyOptions = {},
): Classification {
  if (override.template !== undefined && !isTemplate(override.template)) {
    return fail(
      'UnknownTemplate',
      `runtime.template ${JSON.stringify(override.template)} is not a template; use one of ` +
        `${TEMPLATES.join(', ')}, or leave it out to let Slipway detect it`,
    );
  }
  if (override.lane !== undefined && !isLane(override.lane)) {
    return fail(
      'UnknownLane',
      `runtime.lane ${JSON.stringify(override.lane)} is not a lane; use fast or general, or leave it out`,
    );
  }
  const files = new Set(info.files);
  const detected = TEMPLATES.filter((t) => detectors[t](files));
  const asked = override.template ?? byExtension(override.entrypoint) ?? detected[0];
  if (asked === undefined) return fail('NoEntrypoint', nothingRecognised(info.files));
  const unavailable = (t: Template) =>
    options.templates && !options.templates.includes(t)
      ? fail(
          'TemplateUnavailable',
          `this Slipway cannot run the ${t} template; it runs ${options.templates.join(', ')}`,
        )
      : undefined;
  const plan = planners[asked](info, override.entrypoint, override.build !== undefined);
  // A node project whose build makes a static site runs as static.
  const template = plan.ok ? (plan.template ?? asked) : asked;
  const refused = unavailable(asked) ?? unavailable(template);
  if (refused) return refused;
  if (!plan.ok) {
    return fail('NoEntrypoint', plan.message + alternatives(info, template, override, detected));
  }
  const lane = isLane(override.lane) ? override.lane : plan.lane;
  if (plan.built && lane === 'fast') {
    return fail(
      'NoEntrypoint',
      `${plan.why.split(';')[0]}: the build makes what runs, and it runs on the general lane only; ` +
        'leave runtime.lane out, or deploy the build output without the build script or runtime.build',
    );
  }
  if (options.lanes && !options.lanes.includes(lane)) {
    const why = override.lane ? 'runtime.lane asks for it' : plan.why;
    return fail(
      'LaneUnavailable',
      `this source needs the ${lane} lane (${why}), which this Slipway does not offer; ` +
        (lane === 'general'
          ? 'vendor the dependencies (node_modules/, vendor/) and drop install and build scripts'
          : `set runtime.lane to ${options.lanes.join(' or ')}`),
    );
  }
  const why = isLane(override.lane) ? `${plan.why} (lane set by runtime.lane)` : plan.why;
  return { ok: true, lane, template, entrypoint: plan.entrypoint, why };
}

function isTemplate(value: string | undefined): value is Template {
  return (TEMPLATES as readonly string[]).includes(value ?? '');
}

function isLane(value: string | undefined): value is Lane {
  return (LANES as readonly string[]).includes(value ?? '');
}

/** runtime.entrypoint alone says which runtime the user means: `server.py` is not a Node app. */
function byExtension(entrypoint: string | undefined): Template | undefined {
  if (entrypoint === undefined) return undefined;
  if (/\.py$/.test(entrypoint)) return 'python';
  if (/\.[mc]?js$/.test(entrypoint)) return 'node';
  return undefined;
}

/** When the chosen template cannot run but another detected one could, say how to pick it. */
function alternatives(
  info: SourceInfo,
  chosen: Template,
  override: ClassifyOverride,
  detected: readonly Template[],
): string {
  if (override.template !== undefined || override.entrypoint !== undefined) return '';
  const other = detected.find((t) => t !== chosen && planners[t](info).ok);
  return other ? `; or, to run it as ${other}, set runtime.template to "${other}"` : '';
}

function nothingRecognised(files: readonly string[]): string {
  const looksFor =
    'Slipway found nothing it can run. It looks for a package.json (Node.js); requirements.txt, ' +
    'pyproject.toml or a .py file at the root (Python); or index.html at the root or in public/, ' +
    'dist/ or build/ (static site). Add one, or set runtime.template and runtime.entrypoint';
  const top = new Set(files.map((f) => f.split('/')[0]));
  const [only] = top;
  if (top.size === 1 && only !== undefined && files.every((f) => f.includes('/'))) {
    return (
      `${looksFor}. All files are inside ${JSON.stringify(`${only}/`)}: pack that directory's ` +
      `contents instead (tar -czf app.tar.gz -C ${only} .)`
    );
  }
  return looksFor;
}

function fail(reason: FailureReason, message: string): Classification {
  return { ok: false, reason, message };
}
