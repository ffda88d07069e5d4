import { chmodSync, chownSync, rmSync } from 'node:fs';
import type net from 'node:net';

export interface SocketOwner {
  uid: number;
  gid: number;
}

/**
 * Listens on a unix socket in a sandbox's directory, mode 0600 and owned by the sandbox's uid: the
 * sandbox can connect, no other unprivileged user can. Returns the close function, which also ends
 * open connections (a piped egress tunnel would otherwise hold the close forever).
 */
export async function listenOnSocket(
  server: net.Server,
  path: string,
  owner: SocketOwner | undefined,
): Promise<() => Promise<void>> {
  const open = new Set<net.Socket>();
  server.on('connection', (socket: net.Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  rmSync(path, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
  chmodSync(path, 0o600);
  if (owner) chownSync(path, owner.uid, owner.gid);
  return () =>
    new Promise<void>((resolve, reject) => {
      for (const socket of open) socket.destroy();
      server.close((err) => {
        if (err && (err as NodeJS.ErrnoException).code !== 'ERR_SERVER_NOT_RUNNING') reject(err);
        else resolve();
      });
    });
}
