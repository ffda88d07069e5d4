import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { segments } from '../sources/paths.js';
import { BUILD_ROOTS } from '../sources/templates.js';
import { errorText, warn } from './diag.js';
import { APP_DIR, type Template } from './protocol.js';
import { BadSourceError } from './unpack.js';

const DEFAULTS: Record<Template, string[]> = {
  node: ['server.js', 'index.js', 'app.js', 'main.js', 'server.mjs', 'index.mjs'],
  python: ['main.py', 'app.py', 'server.py'],
  static: [],
};

/** How node resolves a main without its extension (`dist/server` → `dist/server.js`). */
const NODE_EXTENSIONS = ['', '.js', '.mjs', '.cjs', '/index.js', '/index.mjs'];

/**
 * The absolute path of the entrypoint inside /app. An explicit one must stay inside the tree and
 * exist (after the build, which may have written it); without one, node looks at package.json
 * `main`, then conventional names.
 */
export function resolveEntrypoint(template: Template, entrypoint: string | undefined): string {
  if (entrypoint !== undefined && entrypoint !== '') {
    const path = inside(entrypoint);
    const tries = template === 'node' ? NODE_EXTENSIONS.map((ext) => path + ext) : [path];
    const found = tries.find((p) => existsSync(p) && statSync(p).isFile());
    if (!found) {
      throw new BadSourceError(
        `entrypoint ${JSON.stringify(entrypoint)} is not in the source${builtNote()}`,
      );
    }
    return found;
  }
  const candidates = [...(template === 'node' ? packageMain() : []), ...DEFAULTS[template]];
  for (const candidate of candidates) {
    const path = inside(candidate);
    if (existsSync(path) && statSync(path).isFile()) return path;
  }
  throw new BadSourceError(
    `no entrypoint found for the ${template} template: set runtime.entrypoint or add one of ${DEFAULTS[template].join(', ')}`,
  );
}

/**
 * The directory a static site is served from: the entrypoint's dir, or the entrypoint itself.
 * Without one, a built site is served from its build's output; a site whose build did not run is
 * refused, so the unbuilt source (a Vite index.html) is never what a URL serves.
 */
export function staticRoot(
  entrypoint: string | undefined,
  built: boolean,
): { root: string; index: string } {
  if (entrypoint === undefined || entrypoint === '') {
    if (built) return { root: builtRoot(), index: 'index.html' };
    if (buildScript()) {
      throw new BadSourceError(
        'this site has a build script that did not run: it is built on the general lane only',
      );
    }
    return { root: APP_DIR, index: 'index.html' };
  }
  const path = inside(entrypoint);
  if (existsSync(path) && statSync(path).isDirectory()) return { root: path, index: 'index.html' };
  if (!existsSync(path)) {
    throw new BadSourceError(`entrypoint ${JSON.stringify(entrypoint)} is not in the source`);
  }
  const slash = path.lastIndexOf('/');
  return { root: path.slice(0, slash), index: path.slice(slash + 1) };
}

function builtRoot(): string {
  for (const dir of BUILD_ROOTS) {
    const index = join(APP_DIR, dir, 'index.html');
    if (existsSync(index) && statSync(index).isFile()) return join(APP_DIR, dir);
  }
  throw new BadSourceError(
    `the build left no index.html in ${BUILD_ROOTS.map((d) => `${d}/`).join(', ')}: set ` +
      'runtime.entrypoint to the directory the build writes, or, for a server, name it in ' +
      'package.json "main" or a "start" script of the form "node dist/server.js"',
  );
}

function builtNote(): string {
  return buildScript() ? ' (nor written by npm run build)' : '';
}

function inside(relative: string): string {
  if (relative.startsWith('/') || relative.includes('\0') || segments(relative).includes('..')) {
    throw new BadSourceError(
      `entrypoint ${JSON.stringify(relative)} must be a path inside the source`,
    );
  }
  return join(APP_DIR, ...segments(relative));
}

function packageMain(): string[] {
  const main = readPackage()?.main;
  return typeof main === 'string' ? [main] : [];
}

function buildScript(): boolean {
  const scripts = readPackage()?.scripts;
  return typeof scripts === 'object' && scripts !== null && 'build' in scripts;
}

function readPackage(): { main?: unknown; scripts?: unknown } | undefined {
  const path = join(APP_DIR, 'package.json');
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as { main?: unknown; scripts?: unknown };
  } catch (err) {
    // A broken package.json is the app's own business: fall back to the conventional names.
    warn('package.json is not valid JSON; ignoring it', { error: errorText(err) });
    return undefined;
  }
}
