import { createServer, request, Agent, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Drain, SHUTTING_DOWN } from '../../src/http/drain.js';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = undefined;
});

/** Requests `/hold` answers once the test releases them, oldest first. */
const held: (() => void)[] = [];
let arrived: (() => void) | undefined;

/** Resolves once the listener has admitted the next `/hold` request: it is in flight. */
const nextHold = (): Promise<void> => new Promise((resolve) => (arrived = resolve));
const release = (): void => held.shift()?.();

/**
 * A listener through a drain like server.ts's: `/now` answers at once, `/hold` when released
 * (or never). `servable`: every request is one a draining server behind a front door answers.
 */
async function listen(drain: Drain, servable = false): Promise<number> {
  held.length = 0;
  server = createServer((req, res) => {
    if (!drain.admit(res, servable)) return;
    if (req.url !== '/hold') {
      res.end('done');
      return;
    }
    held.push(() => res.end('done'));
    arrived?.();
  });
  drain.watch(server);
  server.on('upgrade', (_req, socket) => {
    if (!drain.refuseUpgrade(socket)) socket.destroy();
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

function get(
  port: number,
  path: string,
  agent?: Agent,
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** What a raw connection gets back for `head`, until the server closes it. */
async function exchange(port: number, head: string): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  let reply = '';
  socket.on('data', (c: Buffer) => (reply += c.toString('latin1')));
  socket.on('error', () => undefined);
  socket.write(head);
  await new Promise((r) => socket.once('close', r));
  return reply;
}

describe('Drain', () => {
  it('lets requests in flight finish, refuses new ones 503 on open connections, then exits', async () => {
    const drain = new Drain();
    const port = await listen(drain);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    expect((await get(port, '/now', agent)).status).toBe(200);
    let begun = 0;
    drain.onBegin(() => (begun += 1));

    const inFlight = nextHold();
    const slow = get(port, '/hold');
    await inFlight;
    let drained = false;
    const draining = drain.run(5_000).finally(() => (drained = true));
    expect(begun).toBe(1);
    expect(drain.active).toBe(true);

    // The idle keep-alive connection is still open: its next request hears why.
    const late = await get(port, '/now', agent);
    expect(late.status).toBe(503);
    expect(JSON.parse(late.body)).toEqual(SHUTTING_DOWN);
    expect(late.headers['retry-after']).toBe('5');
    expect(late.headers.connection).toBe('close');
    // No new connection is accepted.
    await expect(get(port, '/now')).rejects.toThrow(/ECONNREFUSED/);

    // The drain waits for the request in flight, however long it takes.
    expect(drained).toBe(false);
    release();
    const answered = await slow;
    expect(answered).toMatchObject({ status: 200, body: 'done' });
    // Begun before the drain, answered after it started: it says the connection ends.
    expect(answered.headers.connection).toBe('close');
    const result = await draining;
    expect(result.forced).toBe(0);
    expect(await drain.run(5_000)).toBe(result);
    agent.destroy();
  });

  it('cuts what is still running at the timeout and says how many', async () => {
    const drain = new Drain();
    const port = await listen(drain);
    const inFlight = nextHold();
    const stuck = get(port, '/hold').catch((err: Error) => err.message);
    await inFlight;
    const started = Date.now();
    const result = await drain.run(300);
    // Cut at the timeout, not when the request would have ended (never).
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(result.forced).toBe(1);
    expect(await stuck).toMatch(/socket hang up|ECONNRESET/);
  });

  it('cut() ends the wait at once; an upgrade while draining gets the 503 too', async () => {
    const drain = new Drain();
    const port = await listen(drain);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    await get(port, '/now', agent);
    const socket = connect(port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    const inFlight = nextHold();
    void get(port, '/hold').catch(() => undefined);
    await inFlight;
    const draining = drain.run(60_000);
    let reply = '';
    socket.on('data', (c: Buffer) => (reply += c.toString('latin1')));
    const closed = new Promise((r) => socket.once('close', r));
    socket.write(
      'GET /ws HTTP/1.1\r\nhost: x\r\nconnection: upgrade\r\nupgrade: websocket\r\n\r\n',
    );
    await closed;
    expect(reply).toMatch(/^HTTP\/1\.1 503 /);
    expect(reply).toContain('retry-after: 5');
    expect(reply).toContain(JSON.stringify(SHUTTING_DOWN));
    drain.cut();
    expect((await draining).forced).toBe(1);
    agent.destroy();
  });

  it('behind a front door, once over, ends a GET unanswered (the door sends it again) and refuses the rest', async () => {
    const drain = new Drain();
    // A front door stops accepting for the server: connections it opened before still arrive.
    drain.acceptFrom({ stopAccepting: () => Promise.resolve() });
    const port = await listen(drain, true);
    const inFlight = nextHold();
    const slow = get(port, '/hold');
    await inFlight;
    const during = drain.run(5_000);
    // While the drain runs, the app's GET is still answered: its server still runs.
    const answered = await exchange(port, 'GET /now HTTP/1.1\r\nhost: x\r\n\r\n');
    expect(answered).toMatch(/^HTTP\/1\.1 200 /);
    release();
    await slow;
    await during;
    expect(await exchange(port, 'GET /now HTTP/1.1\r\nhost: x\r\n\r\n')).toBe('');
    expect(await exchange(port, 'HEAD /now HTTP/1.1\r\nhost: x\r\n\r\n')).toBe('');
    const post = await exchange(port, 'POST /now HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n');
    expect(post).toMatch(/^HTTP\/1\.1 503 /);
    expect(post).toContain(JSON.stringify(SHUTTING_DOWN));
  });
});
