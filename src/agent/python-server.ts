import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { join, relative } from 'node:path';
import { placement } from './placement.js';
import { APP_DIR } from './protocol.js';

/** What the warm interpreter runs instead of the script: `python -m <module> <argv...>`. */
export interface PythonServer {
  module: string;
  argv: string[];
  /** For the app's log: which server runs which app. */
  note: string;
}

/** Enough of a script to find its `app = Flask(...)` line; the rest is not read. */
const HEAD_BYTES = 256 * 1024;
const APP_LINE = /^([A-Za-z_]\w*)\s*(?::[^=\n]*)?=\s*(Flask|FastAPI)\s*\(/m;

/**
 * A Flask or FastAPI app is an object, not a server: when the script defines one at top level and
 * its requirements installed the matching production server (gunicorn for Flask's WSGI, uvicorn
 * for FastAPI's ASGI), run that server on $PORT. Otherwise the script runs as it is.
 */
export function pythonServer(entry: string, paths: string[]): PythonServer | undefined {
  const match = APP_LINE.exec(head(entry));
  const module = relative(APP_DIR, entry).replace(/\.py$/, '').split('/').join('.');
  if (!match || !/^[A-Za-z_][\w.]*$/.test(module)) return undefined;
  const [, name, framework] = match;
  const target = `${module}:${name}`;
  const installed = (pkg: string) => paths.some((dir) => existsSync(join(dir, pkg)));
  if (framework === 'Flask' && installed('gunicorn')) {
    return {
      module: 'gunicorn',
      argv: [
        'gunicorn',
        '--bind',
        `127.0.0.1:${placement.appPort}`,
        '--access-logfile',
        '-',
        target,
      ],
      note: `Flask app ${target} served by gunicorn on $PORT`,
    };
  }
  if (framework === 'FastAPI' && installed('uvicorn')) {
    return {
      module: 'uvicorn',
      argv: ['uvicorn', target, '--host', '127.0.0.1', '--port', String(placement.appPort)],
      note: `FastAPI app ${target} served by uvicorn on $PORT`,
    };
  }
  return undefined;
}

function head(path: string): string {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(HEAD_BYTES);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return buf.subarray(0, n).toString('utf8');
  } finally {
    closeSync(fd);
  }
}
