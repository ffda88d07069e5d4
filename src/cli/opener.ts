import { spawn } from 'node:child_process';

/** How an attempt to open a URL went; `why` says what stood in the way. */
export type Opened = { opened: true } | { opened: false; why: string };

/** An opener that runs this long without failing has handed the URL to a browser. */
const SETTLE_MS = 3000;

/** The platform's "open this URL" command. */
function openerFor(url: string): [string, string[]] {
  if (process.platform === 'darwin') return ['open', [url]];
  // `start` is a cmd builtin; its first quoted argument is a window title.
  if (process.platform === 'win32') return ['cmd', ['/c', 'start', '""', url]];
  return ['xdg-open', [url]];
}

/**
 * Opens `url` in the browser, and says so only when it did: a machine without a display (a
 * server, a container, an SSH session) or without an opener cannot, and xdg-open exits non-zero
 * when it finds no browser.
 */
export function openInBrowser(url: string, env: NodeJS.ProcessEnv = process.env): Promise<Opened> {
  const desktop = process.platform === 'darwin' || process.platform === 'win32';
  if (!desktop && !env.DISPLAY && !env.WAYLAND_DISPLAY) {
    return Promise.resolve({
      opened: false,
      why: 'no display (DISPLAY and WAYLAND_DISPLAY are unset)',
    });
  }
  const [command, args] = openerFor(url);
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: 'ignore', detached: true });
    const timer = setTimeout(() => {
      child.unref();
      resolve({ opened: true });
    }, SETTLE_MS);
    const settle = (result: Opened): void => {
      clearTimeout(timer);
      resolve(result);
    };
    child.once('error', (err: NodeJS.ErrnoException) =>
      settle({ opened: false, why: `${command}: ${err.code ?? err.message}` }),
    );
    child.once('exit', (code, signal) =>
      settle(
        code === 0
          ? { opened: true }
          : { opened: false, why: `${command} exited with ${signal ?? `code ${code}`}` },
      ),
    );
  });
}
