import { linkSync, lstatSync, rmSync } from 'node:fs';
import type { PinnedSocket } from './pinned-socket.js';

/**
 * Links a sandbox's pinned app socket into a dir only the host writes, for a proxy that runs
 * outside the control plane (the native front door) and cannot use the control plane's pinned
 * handle. The link names the very inode that was pinned, so whatever the sandbox later does to
 * its own socket dir, the proxy reaches the socket the agent made, never a path the app chose.
 * Throws when `entry` no longer names the pinned socket (it was swapped meanwhile).
 */
export function linkAppSocket(pinned: PinnedSocket, entry: string, link: string): string {
  rmSync(link, { force: true });
  // link(2) does not follow a symlink at `entry`: a swapped-in symlink would be linked as a
  // symlink, which the check below refuses.
  linkSync(entry, link);
  const made = lstatSync(link);
  const { dev, ino } = pinned.identity;
  if (!made.isSocket() || made.dev !== dev || made.ino !== ino) {
    rmSync(link, { force: true });
    throw new Error(`${entry} is no longer the socket the sandbox's agent made`);
  }
  return link;
}
