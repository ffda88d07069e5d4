import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { FORWARDED_HEADER } from '../../src/cluster/forward-proof.js';
import { leaderForwarder } from '../../src/cluster/leader-forward.js';
import type { LeaderView } from '../../src/cluster/leader-lease.js';

/** A follower in front of a leader, both real listeners on loopback. */
const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

async function listen(server: Server): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** The leader: says who asked for what, with which body and headers; upgrades echo. */
async function leader(): Promise<{ url: string; seen: IncomingMessage[] }> {
  const seen: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    seen.push(req);
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      res.writeHead(201, { 'content-type': 'application/json', 'x-leader': 'yes' });
      res.end(JSON.stringify({ method: req.method, url: req.url, host: req.headers.host, body }));
    });
  });
  server.on('upgrade', (req: IncomingMessage, socket) => {
    seen.push(req);
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n',
    );
    socket.pipe(socket);
  });
  return { url: `http://127.0.0.1:${await listen(server)}`, seen };
}

/** The follower: hands what the forwarder takes to the leader; answers `local` itself. */
async function follower(view: () => LeaderView, appHost = false): Promise<number> {
  const forward = leaderForwarder(view);
  const server = createServer((req, res) => {
    if (forward.request(req, res, appHost)) return;
    res.end('local');
  });
  server.on('upgrade', (req: IncomingMessage, socket, head: Buffer) => {
    if (!forward.upgrade(req, socket, head)) socket.destroy();
  });
  return listen(server);
}

function call(
  port: number,
  path: string,
  init: { method?: string; body?: string; headers?: Record<string, string> } = {},
) {
  return new Promise<{ status: number; headers: IncomingMessage['headers']; body: string }>(
    (resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, path, method: init.method ?? 'GET', headers: init.headers },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        },
      );
      req.on('error', reject);
      req.end(init.body);
    },
  );
}

const following = (leaderUrl?: string): LeaderView => ({
  leading: false,
  identity: 'follower-1',
  ...(leaderUrl ? { holder: 'leader-1', leaderUrl } : {}),
});

describe('leaderForwarder', () => {
  it('hands a follower API call to the leader, body and host kept, marked as forwarded', async () => {
    const l = await leader();
    const port = await follower(() => following(l.url));
    const res = await call(port, '/v1/apps?x=1', {
      method: 'POST',
      body: '{"name":"a"}',
      headers: { 'content-type': 'application/json', host: 'deploy.example.com' },
    });
    expect(res.status).toBe(201);
    expect(res.headers['x-leader']).toBe('yes');
    expect(JSON.parse(res.body)).toEqual({
      method: 'POST',
      url: '/v1/apps?x=1',
      host: 'deploy.example.com',
      body: '{"name":"a"}',
    });
    expect(l.seen[0]?.headers[FORWARDED_HEADER]).toBe('follower-1');
  });

  it('answers its own probes and metrics, but forwards an app host asking for /healthz', async () => {
    const l = await leader();
    const api = await follower(() => following(l.url));
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      expect((await call(api, path)).body, path).toBe('local');
    }
    const apps = await follower(() => following(l.url), true);
    expect((await call(apps, '/healthz')).status).toBe(201);
    expect(l.seen).toHaveLength(1);
  });

  it('serves everything itself while it leads', async () => {
    const l = await leader();
    const port = await follower(() => ({ leading: true, identity: 'me', leaderUrl: l.url }));
    expect((await call(port, '/v1/apps')).body).toBe('local');
    expect(l.seen).toHaveLength(0);
  });

  it('answers 503 leader_unavailable with Retry-After when no leader is known or it cannot be reached', async () => {
    const none = await follower(() => following());
    const unknown = await call(none, '/v1/apps');
    expect(unknown.status).toBe(503);
    expect(unknown.headers['retry-after']).toBe('2');
    expect(JSON.parse(unknown.body)).toMatchObject({ code: 'leader_unavailable' });

    const gone = await listen(createServer());
    servers.pop()?.close();
    const dead = await follower(() => following(`http://127.0.0.1:${gone}`));
    const refused = await call(dead, '/v1/apps');
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.body)).toMatchObject({
      code: 'leader_unavailable',
      message: expect.stringContaining('cannot be reached') as unknown,
    });
  });

  it('never hands on a request another replica forwarded (no loop between two followers)', async () => {
    const l = await leader();
    const port = await follower(() => following(l.url));
    const res = await call(port, '/v1/apps', { headers: { [FORWARDED_HEADER]: 'follower-2' } });
    expect(res.status).toBe(503);
    expect(l.seen).toHaveLength(0);
  });

  it('carries an upgrade (websocket) to the leader and back', async () => {
    const l = await leader();
    const port = await follower(() => following(l.url), true);
    const socket = connect(port, '127.0.0.1');
    socket.write(
      'GET /ws HTTP/1.1\r\nHost: app.example.com\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n',
    );
    const text = await new Promise<string>((resolve, reject) => {
      let seen = '';
      let pinged = false;
      socket.on('error', reject);
      socket.on('data', (c: Buffer) => {
        seen += c.toString();
        if (!pinged && seen.includes('\r\n\r\n')) {
          pinged = true;
          socket.write('ping');
        }
        if (seen.endsWith('ping')) resolve(seen);
      });
    });
    socket.destroy();
    expect(text).toMatch(/^HTTP\/1\.1 101 Switching Protocols\r\n/);
    expect(l.seen[0]?.headers.upgrade).toBe('echo');
    expect(l.seen[0]?.headers[FORWARDED_HEADER]).toBe('follower-1');
  });
});
