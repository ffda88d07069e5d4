/**
 * FallbackSocket over real sockets and node's own HTTP client, as the router uses it: a request
 * the new release dies under is answered by the previous one when it is safe to send twice, and
 * never when it is not.
 */
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { FallbackSocket } from '../../src/actors/fallback-socket.js';

interface Server {
  port: number;
  /** Connections it accepted. */
  connections: number;
  close(): void;
}

async function serve(onSocket: (socket: net.Socket, nth: number) => void): Promise<Server> {
  const server = net.createServer();
  const s: Server = { port: 0, connections: 0, close: () => server.close() };
  const open = new Set<net.Socket>();
  server.on('connection', (socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    socket.on('error', () => socket.destroy());
    s.connections += 1;
    onSocket(socket, s.connections);
  });
  s.close = () => {
    for (const socket of open) socket.destroy();
    server.close();
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  s.port = (server.address() as net.AddressInfo).port;
  return s;
}

/** An HTTP server on a raw listener: answers `label` to every request. */
function answers(label: string): Promise<Server> {
  const app = http.createServer((_req, res) => res.end(label));
  return serve((socket) => app.emit('connection', socket));
}

/** Reads the request, then dies without a byte of answer. */
const diesOnRequest = (): Promise<Server> => serve((s) => s.once('data', () => s.destroy()));

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

async function pair(primary: Promise<Server>, fallback: Promise<Server>) {
  const [p, f] = await Promise.all([primary, fallback]);
  servers.push(p, f);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1, timeout: 60_000 });
  agent.createConnection = () =>
    new FallbackSocket(net.connect(p.port, '127.0.0.1'), () => net.connect(f.port, '127.0.0.1'));
  const send = (method: string, body?: string) =>
    new Promise<string>((resolve, reject) => {
      const req = http.request({ agent, host: '127.0.0.1', port: p.port, method, path: '/' });
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve(text));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  return { primary: p, fallback: f, send, agent };
}

describe('FallbackSocket', () => {
  it('leaves a healthy primary alone: the fallback is never dialled', async () => {
    const { send, fallback, agent } = await pair(answers('new'), answers('old'));
    expect(await send('GET')).toBe('new');
    expect(await send('GET')).toBe('new');
    expect(fallback.connections).toBe(0);
    agent.destroy();
  });

  it('resends a GET the primary died under to the fallback, which answers it', async () => {
    const { send, fallback, agent } = await pair(diesOnRequest(), answers('old'));
    expect(await send('GET')).toBe('old');
    expect(fallback.connections).toBe(1);
    agent.destroy();
  });

  it('never resends a POST: it may have changed something before the crash', async () => {
    const { send, fallback, agent } = await pair(diesOnRequest(), answers('old'));
    await expect(send('POST', 'order=1')).rejects.toThrow(/socket hang up|ECONNRESET/);
    expect(fallback.connections).toBe(0);
    agent.destroy();
  });

  it('never resends once an answer began: half an answer is not replaced by another', async () => {
    const cut = serve((s) =>
      s.once('data', () => {
        s.write('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nnew');
        setImmediate(() => s.destroy());
      }),
    );
    const { send, fallback, agent } = await pair(cut, answers('old'));
    await expect(send('GET')).rejects.toThrow(/aborted|socket hang up|ECONNRESET/);
    expect(fallback.connections).toBe(0);
    agent.destroy();
  });

  it('resends nothing when the visitor gives up on the request itself', async () => {
    const [holds, old] = await Promise.all([serve(() => undefined), answers('old')]);
    servers.push(holds, old);
    const primary = net.connect(holds.port, '127.0.0.1');
    let dialled = 0;
    const socket = new FallbackSocket(primary, () => {
      dialled += 1;
      return net.connect(old.port, '127.0.0.1');
    });
    socket.write('GET / HTTP/1.1\r\nhost: app\r\n\r\n');
    socket.destroy();
    // Its own listener on the primary's close ran first: had it resent, it would have dialled.
    await once(primary, 'close');
    expect(dialled).toBe(0);
  });

  it('moves a kept-alive connection to the fallback for good once the primary dies', async () => {
    // Answers the first request (each arrives in one piece here), then dies under the next.
    const once = serve((socket) => {
      let requests = 0;
      socket.on('data', () => {
        requests += 1;
        if (requests > 1) socket.destroy();
        else socket.write('HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nnew');
      });
    });
    const { send, primary, fallback, agent } = await pair(once, answers('old'));
    expect(await send('GET')).toBe('new');
    expect(await send('GET')).toBe('old');
    expect(await send('GET')).toBe('old');
    expect(primary.connections).toBe(1);
    expect(fallback.connections).toBe(1);
    agent.destroy();
  });
});
