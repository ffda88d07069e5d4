// A follower hands requests to the leader at its pod IP, which the replicas' one certificate does
// not name: it trusts exactly the certificate it serves itself, and nothing else.
import { createServer, type Server } from 'node:https';
import { request, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generate } from 'selfsigned';
import { afterEach, describe, expect, it } from 'vitest';
import { leaderForwarder } from '../../src/cluster/leader-forward.js';
import type { LeaderView } from '../../src/cluster/leader-lease.js';
import { peerTls } from '../../src/cluster/peer-tls.js';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import type { TLSSocket } from 'node:tls';

const servers: (Server | HttpServer)[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

/** A certificate for the public host only: no IP address in it. */
async function certificate(host: string): Promise<{ key: string; cert: string }> {
  const pems = await generate([{ name: 'commonName', value: host }], {
    keySize: 2048,
    algorithm: 'sha256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: host }] }],
  });
  return { key: pems.private, cert: pems.cert };
}

async function listen(server: Server | HttpServer): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** A TLS leader serving `material`; `seen` counts the requests that reached it. */
async function leader(material: { key: string; cert: string }) {
  const seen: string[] = [];
  const server = createServer(material, (req, res) => {
    seen.push(req.url ?? '');
    res.writeHead(200, {
      'content-type': 'text/plain',
      'x-sni': String((req.socket as TLSSocket).servername),
    });
    res.end('leader');
  });
  return { url: `https://127.0.0.1:${await listen(server)}`, seen };
}

/** A follower (plain HTTP here, for the test's client) checking the leader with `own`'s cert. */
async function follower(leaderUrl: string, own: { cert: string }): Promise<number> {
  const view = (): LeaderView => ({ leading: false, identity: 'f', holder: 'l', leaderUrl });
  const forward = leaderForwarder(view, { tls: peerTls(own.cert) });
  return listen(
    createHttpServer((req, res) => {
      if (!forward.request(req, res, false)) res.end('local');
    }),
  );
}

function get(port: number, path: string) {
  return new Promise<{ status: number; headers: IncomingMessage['headers']; body: string }>(
    (resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path, method: 'POST' }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on('error', reject);
      req.end('secret-body');
    },
  );
}

describe('peerTls', () => {
  it('reaches a leader at an IP its certificate does not name when it serves the same certificate', async () => {
    const shared = await certificate('slipway.example.com');
    const l = await leader(shared);
    const res = await get(await follower(l.url, shared), '/v1/apps');
    expect(res).toMatchObject({ status: 200, body: 'leader' });
    // The SNI names the certificate's host, never the IP.
    expect(res.headers['x-sni']).toBe('slipway.example.com');
    expect(l.seen).toEqual(['/v1/apps']);
  });

  it('refuses a leader presenting another certificate, valid for the same host: 503, nothing sent', async () => {
    const own = await certificate('slipway.example.com');
    const other = await certificate('slipway.example.com');
    const l = await leader(other);
    const res = await get(await follower(l.url, own), '/v1/apps');
    expect(res.status).toBe(503);
    expect(JSON.parse(res.body)).toMatchObject({
      code: 'leader_unavailable',
      message: expect.stringContaining('not the one this replica serves') as unknown,
    });
    expect(l.seen).toEqual([]);
  });
});
