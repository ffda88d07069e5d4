import { isIPv6, type Socket } from 'node:net';

/**
 * The PROXY protocol v1 line (haproxy.org's proxy-protocol.txt) the front door puts before the
 * bytes of each connection it hands to the control plane: who the visitor really is, since the
 * control plane itself only sees the front door's unix socket.
 */
export interface Peer {
  address: string;
  port: number;
}

/** The longest v1 line the spec allows, CRLF included. */
export const MAX_HEADER = 107;

export function proxyLine(client: Peer, local: Peer): string {
  const family = isIPv6(client.address) ? 'TCP6' : 'TCP4';
  return `PROXY ${family} ${client.address} ${local.address} ${client.port} ${local.port}\r\n`;
}

/**
 * Reads the line at the start of `buf`: the peer and how many bytes the line took, `undefined`
 * while the line is incomplete, or an Error when it is not one. `PROXY UNKNOWN` (what HAProxy's
 * health checks send: no visitor behind them) has no peer.
 */
export function parseProxyLine(
  buf: Buffer,
): { peer: Peer | undefined; length: number } | Error | undefined {
  const end = buf.indexOf('\r\n');
  if (end < 0) return buf.length >= MAX_HEADER ? new Error('no PROXY line') : undefined;
  const parts = buf.subarray(0, end).toString('latin1').split(' ');
  const [tag, family, source, , sourcePort] = parts;
  // The spec: a receiver ignores whatever follows UNKNOWN.
  if (tag === 'PROXY' && family === 'UNKNOWN') return { peer: undefined, length: end + 2 };
  if (tag !== 'PROXY' || parts.length !== 6 || (family !== 'TCP4' && family !== 'TCP6')) {
    return new Error('malformed PROXY line');
  }
  const port = Number(sourcePort);
  if (!source || !Number.isInteger(port) || port < 0 || port > 65535) {
    return new Error('malformed PROXY line');
  }
  return { peer: { address: source, port }, length: end + 2 };
}

/**
 * Reads the PROXY line off the start of `conn`, then hands over the socket paused with the bytes
 * after the line put back (`text`: the line itself). A connection that opens with anything else
 * is destroyed.
 */
export function readProxyLine(
  conn: Socket,
  done: (line: { peer: Peer | undefined; text: string }) => void,
): void {
  let head = Buffer.alloc(0);
  const onData = (chunk: Buffer): void => {
    head = Buffer.concat([head, chunk]);
    const parsed = parseProxyLine(head);
    if (parsed === undefined) return;
    conn.off('data', onData);
    if (parsed instanceof Error) {
      conn.destroy();
      return;
    }
    conn.pause();
    const rest = head.subarray(parsed.length);
    if (rest.length > 0) conn.unshift(rest);
    done({ peer: parsed.peer, text: head.subarray(0, parsed.length).toString('latin1') });
  };
  conn.on('data', onData);
}
