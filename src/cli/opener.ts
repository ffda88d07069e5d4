import { spawn } from 'node:child_process';

/** The platform's "open this URL" command. */
function openerFor(url: string): [string, string[]] {
  if (process.platform === 'darwin') return ['open', [url]];
  // `start` is a cmd builtin; its first quoted argument is a window title.
  if (process.platform === 'win32') return ['cmd', ['/c', 'start', '""', url]];
  return ['xdg-open', [url]];
}

/** Opens `url` in the browser; false when this machine has no opener (a server, a container). */
export function openInBrowser(url: string): Promise<boolean> {
  const [command, args] = openerFor(url);
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: 'ignore', detached: true });
    child.once('error', () => resolve(false));
    child.once('spawn', () => {
      child.unref();
      resolve(true);
    });
  });
}
