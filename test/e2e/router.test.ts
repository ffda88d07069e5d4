import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy } from '../support/deploy.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';

const KEY = 'router-key-0123456789abcdef';

/** An app that streams a response in pieces and answers websocket-style upgrades with an echo. */
const STREAMING_APP = `
const http = require('node:http');
const server = http.createServer((req, res) => {
  if (req.url === '/stream') {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: first\\n\\n');
    req.on('close', () => clearTimeout(later));
    const later = setTimeout(() => res.end('data: second\\n\\n'), 400);
    return;
  }
  if (req.url === '/replica-headers') {
    return res.end(JSON.stringify(Object.keys(req.headers).filter((k) => k.startsWith('x-slipway-'))));
  }
  res.end('plain ' + req.headers['x-forwarded-host']);
});
server.on('upgrade', (req, socket) => {
  socket.write('HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: echo\\r\\nConnection: Upgrade\\r\\n\\r\\n');
  socket.on('data', (chunk) => socket.write('echo:' + chunk));
});
server.listen(process.env.PORT);
`;

describe('the app router', () => {
  let server: TestServer;
  let host: string;
  let port: number;
  beforeAll(async () => {
    server = await startTestServer({ auth: { apiKeys: [{ key: KEY, name: 'ops' }] } });
    port = Number(new URL(server.baseURL).port);
    const source = await tarGz({
      'package.json': JSON.stringify({ name: 'streamer', main: 'server.js' }),
      'server.js': STREAMING_APP,
    });
    const res = await deploy(server.baseURL, KEY, { name: 'streamer' }, source);
    expect(res.status).toBe(200);
    host = new URL(String(res.body.url)).host;
  });
  afterAll(() => server.stop());

  it('streams a response as the app writes it, before the app has finished', async () => {
    const chunks: string[] = [];
    const whole = await rawExchange(
      `GET /stream HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
      (text) => chunks.push(text),
    );
    expect(chunks.some((c) => c.includes('data: first') && !c.includes('data: second'))).toBe(true);
    expect(whole).toContain('data: second');
  });

  it('passes upgrades through and pipes bytes both ways', async () => {
    const text = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let got = '';
      socket.on('error', reject);
      socket.on('data', (chunk) => {
        got += chunk.toString();
        if (got.includes('101 Switching Protocols') && !got.includes('echo:')) socket.write('ping');
        if (got.includes('echo:ping')) {
          socket.destroy();
          resolve(got);
        }
      });
      socket.write(
        `GET /ws HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n`,
      );
    });
    expect(text).toContain('HTTP/1.1 101 Switching Protocols');
    expect(text).toContain('echo:ping');
  });

  it("never hands an app the replicas' forwarding headers (a proof it could replay to the leader)", async () => {
    const whole = await rawExchange(
      `GET /replica-headers HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n` +
        'X-Slipway-Forwarded-By: replica-b\r\nX-Slipway-Forwarded-For: 10.0.0.5\r\n' +
        `X-Slipway-Forwarded-Proof: v1.${Date.now()}.${'A'.repeat(43)}\r\n\r\n`,
    );
    expect(whole.slice(whole.indexOf('\r\n\r\n') + 4), whole).toMatch(/^(?:[0-9a-f]+\r\n)?\[\]/);
  });

  it('tells the app which host the visitor asked for', async () => {
    const whole = await rawExchange(`GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    expect(whole).toContain(`plain ${host}`);
  });

  it('sends requests for the control plane host to the control plane', async () => {
    const whole = await rawExchange(
      `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
    );
    expect(whole).toContain('{"status":"ok"}');
  });

  it('takes a request head of up to 16 KB to the app, and answers a bigger one 431', async () => {
    const head = (padding: number): string =>
      `GET / HTTP/1.1\r\nHost: ${host}\r\nX-Padding: ${'a'.repeat(padding)}\r\nConnection: close\r\n\r\n`;
    expect(await rawExchange(head(15 * 1024))).toContain(`plain ${host}`);
    const bodyOf = (answer: string): unknown =>
      JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    const over = await rawExchange(head(17 * 1024));
    expect(over).toMatch(/^HTTP\/1\.1 431 /);
    expect(bodyOf(over)).toMatchObject({ code: 'headers_too_large' });
    // Past what the native front door's buffer holds (about 19 KB), HAProxy refuses it by itself
    // (docs/data-path.md).
    expect(await rawExchange(head(40 * 1024))).toMatch(/^HTTP\/1\.1 (431|400) /);
  });

  function rawExchange(request: string, onChunk?: (text: string) => void): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let all = '';
      socket.on('error', reject);
      socket.on('data', (chunk) => {
        all += chunk.toString();
        onChunk?.(chunk.toString());
      });
      socket.on('end', () => resolve(all));
      socket.write(request);
    });
  }
});
