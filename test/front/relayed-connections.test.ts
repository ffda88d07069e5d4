/**
 * A connection the front door hands over: its PROXY line, then the visitor's bytes. Under TLS the
 * line and the visitor's ClientHello often arrive in one read; the server must get the bytes
 * after the line, and the visitor's address from it. Before, resuming the socket after handing
 * it to the HTTPS server gave its next bytes to nobody: the handshake never finished.
 */
import { rmSync, mkdtempSync } from 'node:fs';
import { createServer as createHttpsServer, type Server } from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptRelayed } from '../../src/front/relayed-connections.js';

const dir = mkdtempSync(join(tmpdir(), 'slipway-relayed-'));
const socketPath = join(dir, 'cp.sock');
let https: Server;
let listener: net.Server;

beforeAll(async () => {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], { keySize: 2048 });
  https = createHttpsServer({ key: pems.private, cert: pems.cert }, (req, res) => {
    res.end(`from ${req.socket.remoteAddress}:${req.socket.remotePort}`);
  });
  listener = net.createServer((conn) => acceptRelayed(conn, https));
  await new Promise<void>((resolve) => listener.listen(socketPath, resolve));
});

afterAll(() => {
  listener.close();
  https.close();
  rmSync(dir, { recursive: true, force: true });
});

/** One HTTPS GET over the unix socket, the PROXY line in the same write as the ClientHello. */
function getThroughFrontDoor(proxyLine: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const raw = net.connect(socketPath, () => {
      raw.cork();
      raw.write(proxyLine);
      const secure = tls.connect({ socket: raw, rejectUnauthorized: false }, () => {
        secure.end('GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
      });
      process.nextTick(() => raw.uncork());
      let answer = '';
      secure.on('data', (chunk: Buffer) => (answer += chunk.toString()));
      secure.on('end', () => resolve(answer));
      secure.on('error', reject);
    });
    raw.on('error', reject);
  });
}

describe('relayed connections to an HTTPS server', () => {
  it('completes the handshake when the ClientHello came with the PROXY line, naming the visitor', async () => {
    const answer = await getThroughFrontDoor('PROXY TCP4 203.0.113.7 127.0.0.1 40123 443\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toContain('from 203.0.113.7:40123');
  });

  it('takes a health check line (PROXY UNKNOWN) with no visitor behind it', async () => {
    const answer = await getThroughFrontDoor('PROXY UNKNOWN\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
  });
});
