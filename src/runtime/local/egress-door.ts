import type net from 'node:net';
import { createEgressGate } from '../egress/egress-gate.js';
import type { EgressLimits } from '../egress/egress-limits.js';
import { EgressRules, type EgressRuleSet } from '../egress/egress-rules.js';
import { listenOnSocket, type SocketOwner } from './unix-listener.js';
import type { Log } from '../../logging.js';

export interface EgressDoorOptions {
  path: string;
  allowedHosts: string[];
  allowPrivate: string[];
  owner?: SocketOwner;
  /** The runtime's caps (its shared count included); defaults in egress-limits.ts. */
  limits?: Partial<EgressLimits>;
  log: Log;
}

export interface EgressDoor {
  close(): Promise<void>;
  /**
   * Replaces what the gate lets through from now on; tunnels the new rules refuse are cut. The
   * general lane widens the rules to the package registry for its install, then narrows them back.
   */
  setRules(rules: EgressRuleSet): void;
}

/**
 * The host end of a sandbox's `egress.sock`: the egress gate with this app's allowed_hosts. Opened
 * before the sandbox boots (so the control plane never makes a socket in a dir the sandbox has
 * seen) with an empty list, which refuses everything with a clear 403; the inject sets the app's.
 */
export async function openEgressDoor(opts: EgressDoorOptions): Promise<EgressDoor> {
  const rules = new EgressRules(opts, opts.log);
  const server: net.Server = createEgressGate({ rules, limits: opts.limits, log: opts.log });
  server.on('error', (err) => opts.log('info', 'egress gate server error', { error: err.message }));
  const close = await listenOnSocket(server, opts.path, opts.owner);
  return { close, setRules: (next) => rules.set(next) };
}
