import { closeSync, constants, fstatSync, openSync } from 'node:fs';

/** O_PATH: a handle on the inode itself, neither read nor written (same value on x64 and arm64). */
const O_PATH = 0o10000000;

/**
 * A unix socket in a sandbox's dir, pinned by inode when the sandbox is taken over: connecting
 * through `/proc/self/fd/N` reaches that socket whatever the sandbox later does to the directory
 * entry (a symlink to a host socket, a rename), so the control plane never follows a path the
 * sandbox could have written.
 */
export class PinnedSocket {
  private fd: number | undefined;
  /** Which inode it pins (device and inode number): a link to it must name the same. */
  readonly identity: { dev: number; ino: number };

  constructor(path: string) {
    const fd = openSync(path, O_PATH | constants.O_NOFOLLOW);
    const stat = fstatSync(fd);
    if (!stat.isSocket()) {
      closeSync(fd);
      throw new Error(`${path} is not a socket`);
    }
    this.fd = fd;
    this.identity = { dev: stat.dev, ino: stat.ino };
  }

  /** The path to connect to; throws once closed. */
  get path(): string {
    if (this.fd === undefined) throw new Error('the socket is closed');
    return `/proc/self/fd/${this.fd}`;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}
