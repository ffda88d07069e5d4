import type net from 'node:net';
import { createEgressGate } from './egress-gate.js';
import { listenOnSocket, type SocketOwner } from './unix-listener.js';

export interface EgressDoorOptions {
  path: string;
  allowedHosts: string[];
  allowPrivate: string[];
  owner?: SocketOwner;
  log: (msg: string, extra?: object) => void;
}

/**
 * The host end of a sandbox's `egress.sock`: the egress gate with this app's allowed_hosts. Opened
 * at inject (when the list is known) and always opened, even for an empty list: the gate then
 * refuses everything with a clear 403 instead of the app seeing a dead proxy.
 */
export async function openEgressDoor(opts: EgressDoorOptions): Promise<{ close(): Promise<void> }> {
  const server: net.Server = createEgressGate({
    allowedHosts: opts.allowedHosts,
    allowPrivate: opts.allowPrivate,
    log: opts.log,
  });
  server.on('error', (err) => opts.log('egress gate server error', { error: err.message }));
  const close = await listenOnSocket(server, opts.path, opts.owner);
  return { close };
}
