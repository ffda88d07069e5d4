import type { SourceInfo } from './tarball.js';

/**
 * One planner per template: given the source (and maybe the user's runtime.entrypoint), find what
 * to run and which lane it needs, or say exactly what is missing. docs/classifier.md is the table
 * these functions implement; keep the two in step.
 */
export type Lane = 'fast' | 'general';
export type Template = 'static' | 'node' | 'python';

/**
 * `template` is set when the files say more than the detector did: a node project with a build
 * script and no server is a static site once built. An empty `entrypoint` on the general lane
 * means the build makes it: the agent looks for it in the built tree (BUILD_ROOTS).
 */
export type Plan =
  | { ok: true; entrypoint: string; lane: Lane; why: string; template?: Template; built?: true }
  | { ok: false; message: string };

/** `custom`: the metadata's runtime.build, which stands in for (and overrides) a build script. */
export const planners: Record<
  Template,
  (info: SourceInfo, entrypoint?: string, custom?: boolean) => Plan
> = {
  node: planNode,
  python: planPython,
  static: planStatic,
};

/** Whether the file names alone make the source look like this template. */
export const detectors: Record<Template, (files: ReadonlySet<string>) => boolean> = {
  node: (files) => files.has('package.json') || NODE_LONE.some((f) => files.has(f)),
  python: (files) =>
    files.has('requirements.txt') ||
    files.has('pyproject.toml') ||
    [...files].some((f) => !f.includes('/') && f.endsWith('.py')),
  static: (files) => STATIC_ROOTS.some((dir) => files.has(indexOf(dir))),
};

const NODE_CONVENTIONAL = ['server.js', 'index.js', 'app.js', 'main.js', 'server.mjs'];
/** Without a package.json only these make a node app: index.js or app.js may be browser code. */
const NODE_LONE = ['server.js', 'server.mjs', 'server.cjs'];
const NODE_EXTENSIONS = ['', '.js', '.mjs', '.cjs', '/index.js', '/index.mjs'];
/** Scripts npm runs on install, plus build: any of them means the source is not ready to run. */
const NODE_STEPS = ['preinstall', 'install', 'postinstall', 'build'];
const PYTHON_CONVENTIONAL = ['app.py', 'main.py', 'server.py'];
const PYTHON_VENDOR_DIRS = ['vendor/', '__pypackages__/'];
const STATIC_ROOTS = ['.', 'public', 'dist', 'build'];
/** Where a build leaves a static site (Vite, Astro: dist; CRA: build; Next export: out). */
export const BUILD_ROOTS = ['dist', 'build', 'out', 'public'];
const builtSite = (custom: boolean) =>
  `static site from ${buildName(custom)}, served from the first of ${BUILD_ROOTS.map((d) => `${d}/`).join(', ')} holding index.html`;

/** How the build is named to the user: their own command, or the package.json script. */
function buildName(custom: boolean): string {
  return custom ? 'runtime.build' : 'npm run build';
}

function planNode(info: SourceInfo, override?: string, custom = false): Plan {
  const files = new Set(info.files);
  const pkg = info.packageJson ?? {};
  const scripts = stringRecord(pkg.scripts);
  const built = custom || scripts.build !== undefined;
  const found = nodeEntrypoint(files, pkg, scripts, override, built);
  const { lane, why } = nodeLane(files, pkg, scripts, custom);
  if ('ok' in found) {
    // A build with no server to run makes a static site: serve what it writes.
    if (!built) return found;
    return {
      ok: true,
      entrypoint: '',
      lane,
      why: `${builtSite(custom)}; ${why}`,
      template: 'static',
      built: true,
    };
  }
  const after = found.deferred ? ` after ${buildName(custom)}` : '';
  return {
    ok: true,
    entrypoint: found.path,
    lane,
    why: `node ${found.path}${after} (from ${found.how}); ${why}`,
    ...(found.deferred ? { built: true as const } : {}),
  };
}

/**
 * With a build script, a named entrypoint the source lacks is taken on trust: the build writes it
 * (tsc → dist/server.js), and the agent checks it once the build has run.
 */
function nodeEntrypoint(
  files: ReadonlySet<string>,
  pkg: Record<string, unknown>,
  scripts: Record<string, string | undefined>,
  override: string | undefined,
  built: boolean,
): { path: string; how: string; deferred?: boolean } | Plan {
  if (override !== undefined) {
    if (files.has(clean(override))) return { path: clean(override), how: 'runtime.entrypoint' };
    return built
      ? { path: clean(override), how: 'runtime.entrypoint', deferred: true }
      : notAFile(override);
  }
  const main = typeof pkg.main === 'string' ? pkg.main : undefined;
  const start = /^node\s+(\S+)$/.exec(scripts.start?.trim() ?? '')?.[1];
  const tries: Array<[string | undefined, string]> = [
    [main && resolveNode(files, main), 'package.json "main"'],
    [start && resolveNode(files, start), 'the "start" script'],
    [NODE_CONVENTIONAL.find((f) => files.has(f)), 'the conventional name'],
  ];
  for (const [path, how] of tries) if (path) return { path, how };
  // The start script names what the project runs; npm init writes a "main" whatever it has.
  const promised: Array<[string | undefined, string]> = [
    [start, 'the "start" script'],
    [main === 'index.js' ? undefined : main, 'package.json "main"'],
  ];
  for (const [path, how] of promised) {
    if (built && path) return { path: clean(path), how, deferred: true };
  }
  // npm init writes "main": "index.js" whatever the project has, so a dangling main falls through.
  const mainNote = main
    ? ` (package.json "main" names ${JSON.stringify(main)}, which is not in the source)`
    : '';
  return {
    ok: false,
    message:
      `no Node.js entrypoint found${mainNote}: set "main" in package.json, add a "start" script ` +
      `of the form "node server.js", add ${NODE_CONVENTIONAL.join(', ')} at the root, or set runtime.entrypoint`,
  };
}

function nodeLane(
  files: ReadonlySet<string>,
  pkg: Record<string, unknown>,
  scripts: Record<string, string | undefined>,
  custom: boolean,
): { lane: Lane; why: string } {
  const deps = Object.keys(stringRecord(pkg.dependencies));
  const missing = deps.filter((dep) => !files.has(`node_modules/${dep}/package.json`));
  const steps = NODE_STEPS.filter((name) => scripts[name] !== undefined);
  if (missing.length === 0 && steps.length === 0 && custom) {
    return { lane: 'general', why: 'general lane: runtime.build to run' };
  }
  if (missing.length === 0 && steps.length === 0) {
    const why =
      deps.length > 0 ? 'all dependencies are vendored in node_modules/' : 'no dependencies';
    return { lane: 'fast', why: `fast lane: ${why}` };
  }
  const reasons = [
    missing.length > 0 ? `dependencies not vendored in node_modules/: ${list(missing)}` : '',
    steps.length > 0 ? `package.json scripts to run: ${steps.join(', ')}` : '',
    custom ? 'runtime.build to run' : '',
  ];
  return { lane: 'general', why: `general lane: ${reasons.filter(Boolean).join('; ')}` };
}

function planPython(info: SourceInfo, override?: string, custom = false): Plan {
  const files = new Set(info.files);
  let entrypoint: string | undefined;
  if (override !== undefined) {
    entrypoint = files.has(clean(override)) ? clean(override) : undefined;
    if (!entrypoint) return notAFile(override);
  } else {
    const rootScripts = info.files.filter(
      (f) => !f.includes('/') && f.endsWith('.py') && f !== 'setup.py',
    );
    entrypoint =
      PYTHON_CONVENTIONAL.find((f) => files.has(f)) ??
      (rootScripts.length === 1 ? rootScripts[0] : undefined);
    if (!entrypoint) {
      return {
        ok: false,
        message:
          `no Python entrypoint found: add ${PYTHON_CONVENTIONAL.join(', ')} at the root (a script that ` +
          'serves HTTP on the port in $PORT), or set runtime.entrypoint',
      };
    }
  }
  // An empty or comment-only requirements.txt asks for nothing: no install, no general lane.
  const manifests = ['requirements.txt', 'pyproject.toml'].filter(
    (f) =>
      files.has(f) &&
      (f !== 'requirements.txt' ||
        info.requirementsTxt === undefined ||
        lists(info.requirementsTxt)),
  );
  const vendored = info.files.some((f) => PYTHON_VENDOR_DIRS.some((dir) => f.startsWith(dir)));
  const lane: Lane = manifests.length > 0 && !vendored ? 'general' : 'fast';
  const laneWhy =
    lane === 'general'
      ? `${manifests.join(' and ')} without vendored packages (vendor/ or __pypackages__/)`
      : manifests.length > 0
        ? 'packages are vendored'
        : files.has('requirements.txt')
          ? 'requirements.txt lists no packages'
          : 'no requirements';
  // The build runs after pip, in the sandbox: only the general lane has one.
  if (custom) {
    const also = lane === 'general' ? `${laneWhy}; ` : '';
    const why = `python ${entrypoint}; general lane: ${also}runtime.build to run`;
    return { ok: true, entrypoint, lane: 'general', why, built: true };
  }
  return { ok: true, entrypoint, lane, why: `python ${entrypoint}; ${lane} lane: ${laneWhy}` };
}

function planStatic(info: SourceInfo, override?: string, custom = false): Plan {
  const files = new Set(info.files);
  // A build script means the files are not the site yet (a Vite index.html loads /src/main.jsx):
  // build, then serve the output. Never the unbuilt source.
  if (custom || stringRecord(info.packageJson?.scripts).build !== undefined) {
    const dir =
      override === undefined ? '' : clean(override).replace(/(^|\/)index\.html$/, '') || '.';
    const from =
      dir === ''
        ? builtSite(custom)
        : `static site from ${buildName(custom)}, served from ${dir || '.'}`;
    return {
      ok: true,
      entrypoint: dir,
      lane: 'general',
      why: `${from}; general lane: ${custom ? 'runtime.build' : 'build script'}`,
      built: true,
    };
  }
  let root: string | undefined;
  if (override !== undefined) {
    // The entrypoint of a static site is the directory to serve; naming its index.html works too.
    const dir = clean(override).replace(/(^|\/)index\.html$/, '') || '.';
    root = files.has(indexOf(dir)) ? dir : undefined;
    if (!root) {
      return {
        ok: false,
        message:
          `runtime.entrypoint ${JSON.stringify(override)} has no index.html; for the static ` +
          'template it names the directory to serve',
      };
    }
  } else {
    root = STATIC_ROOTS.find((dir) => files.has(indexOf(dir)));
    if (!root) {
      return {
        ok: false,
        message: 'no index.html found: add index.html at the root or in public/, dist/ or build/',
      };
    }
  }
  return { ok: true, entrypoint: root, lane: 'fast', why: `static files from ${root}; fast lane` };
}

/** Whether a requirements.txt names anything: a line that is not blank or a comment. */
function lists(requirements: string): boolean {
  return requirements.split('\n').some((line) => !/^\s*(#.*)?$/.test(line));
}

function resolveNode(files: ReadonlySet<string>, path: string): string | undefined {
  const base = clean(path).replace(/\/$/, '');
  return NODE_EXTENSIONS.map((ext) => base + ext).find((candidate) => files.has(candidate));
}

/** `./a//b` → `a/b`, so user-written paths compare equal to the normalised file list. */
function clean(path: string): string {
  return path
    .split('/')
    .filter((part) => part !== '' && part !== '.')
    .join('/');
}

function indexOf(dir: string): string {
  return dir === '.' ? 'index.html' : `${dir}/index.html`;
}

function notAFile(entrypoint: string): Plan {
  return {
    ok: false,
    message: `runtime.entrypoint ${JSON.stringify(entrypoint)} is not a file in the source; fix the path or add the file`,
  };
}

function stringRecord(value: unknown): Record<string, string | undefined> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return {};
  return Object.fromEntries(
    Object.entries(value).filter(
      (entry): entry is [string, string] => typeof entry[1] === 'string',
    ),
  );
}

function list(names: string[]): string {
  return names.length <= 5
    ? names.join(', ')
    : `${names.slice(0, 5).join(', ')} and ${names.length - 5} more`;
}
