import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { segments } from '../sources/paths.js';
import { errorText, warn } from './diag.js';
import { APP_DIR, type Template } from './protocol.js';
import { BadSourceError } from './unpack.js';

const DEFAULTS: Record<Template, string[]> = {
  node: ['server.js', 'index.js', 'app.js', 'main.js', 'server.mjs', 'index.mjs'],
  python: ['main.py', 'app.py', 'server.py'],
  static: [],
};

/**
 * The absolute path of the entrypoint inside /app. An explicit one must stay inside the tree and
 * exist; without one, node looks at package.json `main`, then conventional names.
 */
export function resolveEntrypoint(template: Template, entrypoint: string | undefined): string {
  if (entrypoint !== undefined && entrypoint !== '') {
    const path = inside(entrypoint);
    if (!existsSync(path)) {
      throw new BadSourceError(`entrypoint ${JSON.stringify(entrypoint)} is not in the source`);
    }
    return path;
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

/** The directory a static site is served from: the entrypoint's dir, or the entrypoint itself. */
export function staticRoot(entrypoint: string | undefined): { root: string; index: string } {
  if (entrypoint === undefined || entrypoint === '') return { root: APP_DIR, index: 'index.html' };
  const path = inside(entrypoint);
  if (existsSync(path) && statSync(path).isDirectory()) return { root: path, index: 'index.html' };
  if (!existsSync(path)) {
    throw new BadSourceError(`entrypoint ${JSON.stringify(entrypoint)} is not in the source`);
  }
  const slash = path.lastIndexOf('/');
  return { root: path.slice(0, slash), index: path.slice(slash + 1) };
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
  const path = join(APP_DIR, 'package.json');
  if (!existsSync(path)) return [];
  try {
    const pkg = JSON.parse(readFileSync(path, 'utf8')) as { main?: unknown };
    return typeof pkg.main === 'string' ? [pkg.main] : [];
  } catch (err) {
    // A broken package.json is the app's own business: fall back to the conventional names.
    warn('package.json is not valid JSON; ignoring its main', { error: errorText(err) });
    return [];
  }
}
