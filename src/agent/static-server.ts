import { createReadStream, realpathSync, statSync, type Stats } from 'node:fs';
import http from 'node:http';
import { extname, join, sep } from 'node:path';
import { warn } from './diag.js';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
  '.xml': 'application/xml; charset=utf-8',
  '.csv': 'text/csv; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.otf': 'font/otf',
  '.wasm': 'application/wasm',
  '.pdf': 'application/pdf',
  '.mp4': 'video/mp4',
  '.webm': 'video/webm',
  '.mp3': 'audio/mpeg',
  '.wav': 'audio/wav',
  '.webmanifest': 'application/manifest+json',
};

/** A file of this name in the served folder asks for its dotfiles to be served too. */
export const SERVE_DOTFILES = '.slipway-dotfiles';

/**
 * The static template's server: files under `root` only. Paths are decoded and normalised before
 * use, `..` and NUL are refused, and the real path of what is served must still be inside the root
 * (the unpacker already refuses links that leave the tree; this holds even if one slipped by).
 * Dotfiles and dot-folders (`.env`, `.git/`, `.htpasswd`) are 404 unless the site asks for them
 * with a SERVE_DOTFILES file; `/.well-known/` is meant to be public and is served.
 */
export function createStaticServer(rootDir: string, index: string): http.Server {
  const root = realpathSync(rootDir);
  const dotfiles = statOrUndefined(join(root, SERVE_DOTFILES))?.isFile() === true;
  return http.createServer((req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res
        .writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' })
        .end('method not allowed\n');
      return;
    }
    const pathname = decodePath(req.url ?? '/');
    if (pathname === undefined) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('bad path\n');
      return;
    }
    if (!dotfiles && hidden(pathname)) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    let found: Found;
    try {
      found = locate(root, pathname, index);
    } catch (err) {
      warn('static lookup failed', {
        path: pathname,
        error: err instanceof Error ? err.message : String(err),
      });
      res.writeHead(500, { 'content-type': 'text/plain' }).end('internal error\n');
      return;
    }
    if (found.kind === 'redirect') {
      res.writeHead(301, { location: `${pathname}/` }).end();
      return;
    }
    if (found.kind === 'missing') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    res.writeHead(200, {
      'content-type': TYPES[extname(found.path).toLowerCase()] ?? 'application/octet-stream',
      'content-length': found.stats.size,
      'last-modified': found.stats.mtime.toUTCString(),
    });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    createReadStream(found.path)
      .on('error', (err) => {
        warn('static read failed', { path: found.path, error: err.message });
        res.destroy(err);
      })
      .pipe(res);
  });
}

type Found =
  { kind: 'file'; path: string; stats: Stats } | { kind: 'redirect' } | { kind: 'missing' };

function locate(root: string, pathname: string, index: string): Found {
  const parts = pathname.split('/').filter((p) => p !== '' && p !== '.');
  let path = join(root, ...parts);
  let stats = statOrUndefined(path);
  if (stats?.isDirectory()) {
    if (!pathname.endsWith('/')) return { kind: 'redirect' };
    // The entrypoint names the site's front page; every other directory has its index.html.
    path = join(path, parts.length === 0 ? index : 'index.html');
    stats = statOrUndefined(path);
  }
  if (!stats?.isFile()) return { kind: 'missing' };
  const real = realpathSync(path);
  if (real !== root && !real.startsWith(root + sep)) return { kind: 'missing' };
  return { kind: 'file', path: real, stats };
}

/** A path through a dotfile or dot-folder, other than `/.well-known/`. */
function hidden(pathname: string): boolean {
  const parts = pathname.split('/').filter((p) => p !== '' && p !== '.');
  return parts.some((part, i) => part.startsWith('.') && !(i === 0 && part === '.well-known'));
}

/** The URL's path, decoded; undefined for anything that could climb out or is malformed. */
function decodePath(url: string): string | undefined {
  const raw = url.split('?')[0]?.split('#')[0] ?? '/';
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch (err) {
    warn('undecodable static path', { error: err instanceof Error ? err.message : String(err) });
    return undefined;
  }
  if (!decoded.startsWith('/') || decoded.includes('\0') || decoded.includes('\\'))
    return undefined;
  if (decoded.split('/').includes('..')) return undefined;
  return decoded;
}

function statOrUndefined(path: string): Stats | undefined {
  try {
    return statSync(path, { throwIfNoEntry: false });
  } catch (err) {
    // `/file.html/x` or an over-long name: as absent as a missing file, to a visitor.
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOTDIR' || code === 'ENAMETOOLONG' || code === 'ELOOP') return undefined;
    throw err;
  }
}
