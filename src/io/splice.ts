import type net from 'node:net';

/**
 * Pipes both ways; a side that dies rather than ending cleanly takes the other with it. Shared by
 * the agent's bridges and the host's egress gate (no agent-only imports here).
 */
export function splice(a: net.Socket, b: net.Socket): void {
  for (const [from, to] of [
    [a, b],
    [b, a],
  ] as const) {
    from.on('close', () => {
      if (!from.readableEnded || !from.writableFinished) to.destroy();
    });
    from.pipe(to);
  }
}
