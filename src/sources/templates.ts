import type { SourceInfo } from './tarball.js';

/**
 * One planner per template: given the source (and maybe the user's runtime.entrypoint), find what
 * to run and which lane it needs, or say exactly what is missing. docs/classifier.md is the table
 * these functions implement; keep the two in step.
 */
export type Lane = 'fast' | 'general';
export type Template = 'static' | 'node' | 'python';

export type Plan =
  { ok: true; entrypoint: string; lane: Lane; why: string } | { ok: false; message: string };

export const planners: Record<Template, (info: SourceInfo, entrypoint?: string) => Plan> = {
  node: planNode,
  python: planPython,
  static: planStatic,
};

/** Whether the file names alone make the source look like this template. */
export const detectors: Record<Template, (files: ReadonlySet<string>) => boolean> = {
  node: (files) => files.has('package.json'),
  python: (files) =>
    files.has('requirements.txt') ||
    files.has('pyproject.toml') ||
    [...files].some((f) => !f.includes('/') && f.endsWith('.py')),
  static: (files) => STATIC_ROOTS.some((dir) => files.has(indexOf(dir))),
};

const NODE_CONVENTIONAL = ['server.js', 'index.js', 'app.js', 'main.js'];
const NODE_EXTENSIONS = ['', '.js', '.mjs', '.cjs', '/index.js', '/index.mjs'];
/** Scripts npm runs on install, plus build: any of them means the source is not ready to run. */
const NODE_STEPS = ['preinstall', 'install', 'postinstall', 'build'];
const PYTHON_CONVENTIONAL = ['app.py', 'main.py', 'server.py'];
const PYTHON_VENDOR_DIRS = ['vendor/', '__pypackages__/'];
const STATIC_ROOTS = ['.', 'public', 'dist', 'build'];

function planNode(info: SourceInfo, override?: string): Plan {
  const files = new Set(info.files);
  const pkg = info.packageJson ?? {};
  const scripts = stringRecord(pkg.scripts);
  const found = nodeEntrypoint(files, pkg, scripts, override);
  if ('ok' in found) return found;
  const { lane, why } = nodeLane(files, pkg, scripts);
  return {
    ok: true,
    entrypoint: found.path,
    lane,
    why: `node ${found.path} (from ${found.how}); ${why}`,
  };
}

function nodeEntrypoint(
  files: ReadonlySet<string>,
  pkg: Record<string, unknown>,
  scripts: Record<string, string | undefined>,
  override: string | undefined,
): { path: string; how: string } | Plan {
  if (override !== undefined) {
    return files.has(clean(override))
      ? { path: clean(override), how: 'runtime.entrypoint' }
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
): { lane: Lane; why: string } {
  const deps = Object.keys(stringRecord(pkg.dependencies));
  const missing = deps.filter((dep) => !files.has(`node_modules/${dep}/package.json`));
  const steps = NODE_STEPS.filter((name) => scripts[name] !== undefined);
  if (missing.length === 0 && steps.length === 0) {
    const why =
      deps.length > 0 ? 'all dependencies are vendored in node_modules/' : 'no dependencies';
    return { lane: 'fast', why: `fast lane: ${why}` };
  }
  const reasons = [
    missing.length > 0 ? `dependencies not vendored in node_modules/: ${list(missing)}` : '',
    steps.length > 0 ? `package.json scripts to run: ${steps.join(', ')}` : '',
  ];
  return { lane: 'general', why: `general lane: ${reasons.filter(Boolean).join('; ')}` };
}

function planPython(info: SourceInfo, override?: string): Plan {
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
  const manifests = ['requirements.txt', 'pyproject.toml'].filter((f) => files.has(f));
  const vendored = info.files.some((f) => PYTHON_VENDOR_DIRS.some((dir) => f.startsWith(dir)));
  const lane: Lane = manifests.length > 0 && !vendored ? 'general' : 'fast';
  const laneWhy =
    lane === 'general'
      ? `${manifests.join(' and ')} without vendored packages (vendor/ or __pypackages__/)`
      : manifests.length > 0
        ? 'packages are vendored'
        : 'no requirements';
  return { ok: true, entrypoint, lane, why: `python ${entrypoint}; ${lane} lane: ${laneWhy}` };
}

function planStatic(info: SourceInfo, override?: string): Plan {
  const files = new Set(info.files);
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
