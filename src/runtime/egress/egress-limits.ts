/**
 * Bounds on what sandboxes can make the control plane hold through their egress doors. Every
 * connection costs the host a file descriptor (two once tunnelled), and the control plane shares
 * its fd limit with every other user's deploys: one app opening thousands of slow connections must
 * not starve them (a trickled byte every few seconds used to keep each one alive indefinitely).
 */
import type net from 'node:net';
import type { Log } from '../../logging.js';

export interface EgressLimits {
  /** Open connections one sandbox's door holds at once; more are closed on accept. */
  perSandbox: number;
  /** Open connections across every door of the runtime. */
  total: SharedCount;
  /** From accept, the time a client has to send its whole request head; bytes do not extend it. */
  headTimeoutMs: number;
}

export const DEFAULT_MAX_PER_SANDBOX = 256;
export const DEFAULT_MAX_TOTAL = 4096;
export const DEFAULT_HEAD_TIMEOUT_MS = 30_000;

/** A counter every door of one runtime shares. */
export class SharedCount {
  open = 0;
  constructor(readonly max: number) {}
}

export function egressLimits(opts: Partial<Omit<EgressLimits, 'total'>> & { total?: SharedCount }) {
  return {
    perSandbox: opts.perSandbox ?? DEFAULT_MAX_PER_SANDBOX,
    total: opts.total ?? new SharedCount(DEFAULT_MAX_TOTAL),
    headTimeoutMs: opts.headTimeoutMs ?? DEFAULT_HEAD_TIMEOUT_MS,
  } satisfies EgressLimits;
}

/** A flood is logged once per this interval, with the count, not once per connection. */
const REFUSAL_LOG_MS = 10_000;

/**
 * Counts one door's connections against its own cap and the shared one. `admit` either takes a
 * new connection into the count (released when it closes) or destroys it at once.
 */
export function connectionGate(limits: EgressLimits, log: Log) {
  let open = 0;
  let refused = 0;
  let lastLog = 0;
  return (socket: net.Socket): boolean => {
    const full = open >= limits.perSandbox;
    if (full || limits.total.open >= limits.total.max) {
      socket.destroy();
      refused += 1;
      const now = Date.now();
      if (now - lastLog >= REFUSAL_LOG_MS) {
        const cap = full
          ? `${limits.perSandbox} for this sandbox (runtime.egress.maxConnectionsPerSandbox)`
          : `${limits.total.max} for all sandboxes (runtime.egress.maxConnections)`;
        log('info', 'egress connections refused: too many open', { refused, cap });
        lastLog = now;
        refused = 0;
      }
      return false;
    }
    open += 1;
    limits.total.open += 1;
    socket.once('close', () => {
      open -= 1;
      limits.total.open -= 1;
    });
    return true;
  };
}
