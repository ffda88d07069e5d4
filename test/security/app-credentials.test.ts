/**
 * Issue #25 item 2: `curl -H "Authorization: Bearer <admin key>" http://<public app>/` handed the
 * admin's key to the app (private apps already cut it). A Slipway key or token is now cut from
 * every request an app receives, public or private, websocket upgrades too; an app's own bearer
 * token (one Slipway does not know) still reaches it.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';

const ADMIN = 'admin-forwarding-key-0123456789';

/** Answers every request, and every upgrade request, with the Authorization header it got. */
const ECHO = String.raw`
const http = require('node:http');
const seen = (req) => JSON.stringify({ authorization: req.headers.authorization ?? null });
const server = http.createServer((req, res) => res.end(seen(req)));
server.on('upgrade', (req, socket) => {
  const body = seen(req);
  socket.end('HTTP/1.1 200 OK\r\nContent-Length: ' + Buffer.byteLength(body) + '\r\nConnection: close\r\n\r\n' + body);
});
server.listen(process.env.PORT);
`;

/** Sends an upgrade request for the app's host; resolves with the whole answer the app wrote. */
function upgrade(url: string, authorization: string): Promise<string> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(target.port), '127.0.0.1');
    let text = '';
    socket.setEncoding('utf8');
    // The whole answer: until the end of its body (a front door may keep the connection open).
    const whole = (): boolean => {
      const head = text.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, head))?.[1];
      return head >= 0 && length !== undefined && text.length >= head + 4 + Number(length);
    };
    socket.on('data', (chunk: string) => {
      text += chunk;
      if (whole()) socket.destroy();
    });
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
    socket.write(
      `GET / HTTP/1.1\r\nHost: ${target.host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
        // A websocket handshake as browsers send it: a proxy may refuse one without its key.
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n' +
        `Authorization: ${authorization}\r\n\r\n`,
    );
  });
}

const bodyOf = (text: string): unknown => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));

describe(
  'a Slipway credential never reaches an app, public or private',
  { timeout: 120_000 },
  () => {
    let server: TestServer;
    let base: string;
    let userKey: string;
    const urls: Record<string, string> = {};
    beforeAll(async () => {
      server = await startTestServer({
        auth: { apiKeys: [{ key: ADMIN, name: 'admin', role: 'admin' }] },
        runtime: { poolSize: 1 },
      });
      base = server.baseURL;
      const created = await call(base, '/api/users', {
        method: 'POST',
        token: ADMIN,
        json: { name: 'alice' },
      });
      expect(created.status).toBe(201);
      userKey = String((created.body as { api_key: string }).api_key);
      const source = await tarGz({ 'package.json': '{"main":"server.js"}', 'server.js': ECHO });
      for (const [name, access] of [
        ['echo-public', 'public'],
        ['echo-private', 'private'],
      ] as const) {
        const res = await deploy(base, ADMIN, { name, access }, source);
        expect([200, 202], JSON.stringify(res.body)).toContain(res.status);
        urls[name] = String((await waitForPhase(base, ADMIN, name, ['Ready'], 60_000)).url);
      }
    }, 180_000);
    afterAll(() => server.stop());

    it("cuts the admin's configured key and a user's issued key from a public app's requests", async () => {
      for (const key of [ADMIN, userKey]) {
        const res = await fetchApp(String(urls['echo-public']), {
          headers: { authorization: `Bearer ${key}` },
        });
        expect(res.status).toBe(200);
        expect(JSON.parse(res.body)).toEqual({ authorization: null });
      }
    });

    it('cuts it from an upgrade request too', async () => {
      const answer = await upgrade(String(urls['echo-public']), `Bearer ${ADMIN}`);
      expect(answer).toMatch(/^HTTP\/1\.1 200/);
      expect(bodyOf(answer)).toEqual({ authorization: null });
    });

    it("cuts the owner's key from a private app's requests, as before", async () => {
      const res = await fetchApp(String(urls['echo-private']), {
        headers: { authorization: `Bearer ${ADMIN}` },
      });
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body)).toEqual({ authorization: null });
    });

    it("leaves an app's own Authorization alone", async () => {
      for (const authorization of ['Bearer the-apps-own-token', 'Basic dXNlcjpwdw==']) {
        const res = await fetchApp(String(urls['echo-public']), { headers: { authorization } });
        expect(JSON.parse(res.body)).toEqual({ authorization });
        expect(bodyOf(await upgrade(String(urls['echo-public']), authorization))).toEqual({
          authorization,
        });
      }
    });
  },
);
