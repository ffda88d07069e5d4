/**
 * The agent hands a visitor's connection on app.sock to the node app's own server (the app runs
 * in the agent's process) instead of relaying its bytes to the app's TCP port: the socket the
 * app's server gets is the visitor's, and no loopback connection is made for it.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request } from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { appHandler, trackAppServers } from '../../src/agent/app-servers.js';

const dir = mkdtempSync(join(tmpdir(), 'slipway-app-servers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A unix socket standing for app.sock, whose connections go to `handler`. */
async function appSock(handler: (conn: net.Socket) => void): Promise<string> {
  const path = join(dir, `app-${Math.random().toString(36).slice(2)}.sock`);
  const server = net.createServer({ allowHalfOpen: true }, handler);
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return path;
}

const get = (socketPath: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const req = request({ socketPath, path: '/', headers: { host: 'app' } }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.end();
  });

describe('the agent’s app handler', () => {
  it('gives the app’s own server the visitor’s socket, with no loopback connection', async () => {
    trackAppServers();
    const accepted: net.Socket[] = [];
    const app = createServer((req, res) => res.end(`hello ${req.socket.remoteAddress}`));
    app.on('connection', (socket: net.Socket) => accepted.push(socket));
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    const port = (app.address() as net.AddressInfo).port;
    const tcp: net.Socket[] = [];
    app.on('connection', (socket: net.Socket) => {
      if (socket.remotePort !== 0) tcp.push(socket);
    });

    const visitors: net.Socket[] = [];
    const handler = appHandler('127.0.0.1', port);
    const path = await appSock((conn) => {
      visitors.push(conn);
      handler(conn);
    });
    expect(await get(path)).toBe('hello 127.0.0.1');
    expect(accepted).toHaveLength(1);
    expect(accepted[0]).toBe(visitors[0]);
    expect(tcp).toHaveLength(0);
    app.close();
  });

  it('relays to the port when the app’s server there is not in this process', async () => {
    // Another process (a python app's, a node app's worker): only its port is known here.
    const child = spawn(process.execPath, [
      '-e',
      `const s = require('node:http').createServer((req, res) => res.end('relayed from port ' + req.socket.remotePort));
       s.listen(0, '127.0.0.1', () => console.log(s.address().port));`,
    ]);
    try {
      const port = await new Promise<number>((resolve) =>
        child.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))),
      );
      const path = await appSock(appHandler('127.0.0.1', port));
      const answer = await get(path);
      expect(answer).toMatch(/^relayed from port \d+$/);
      // The agent's own loopback connection: a real ephemeral port.
      expect(Number(answer.split(' ').pop())).toBeGreaterThan(0);
    } finally {
      child.kill();
    }
  });
});
