import net from 'node:net';
import type { Log } from '../../logging.js';

/** The gate of the pod whose address a connection comes from, if it is one of ours. */
export type GateFor = (address: string) => net.Server | undefined;

/**
 * The control plane's egress port for sandbox pods (design.md §4): the pod agent relays its app's
 * proxy connections here from the pod's own address, and the NetworkPolicy lets pods reach
 * nothing else. A connection is handed to the gate of the pod it comes from, which enforces that
 * app's allow-list; one from anywhere else is refused.
 */
export async function listenEgressPort(
  host: string,
  port: number,
  gateFor: GateFor,
  log: Log,
): Promise<{ port: number; close(): Promise<void> }> {
  const server = net.createServer({ allowHalfOpen: true }, (socket) => {
    socket.on('error', (err) => log('info', 'egress port client error', { error: err.message }));
    const from = (socket.remoteAddress ?? '').replace(/^::ffff:/, '');
    const gate = gateFor(from);
    if (gate) {
      gate.emit('connection', socket);
      return;
    }
    log('info', 'egress refused: not a claimed sandbox pod', { from });
    const body = 'egress refused: this address is no Slipway sandbox\n';
    socket.end(
      `HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n` +
        `Connection: close\r\n\r\n${body}`,
    );
    socket.resume();
  });
  server.on('error', (err) => log('info', 'egress port error', { error: err.message }));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as net.AddressInfo).port;
  return {
    port: bound,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
