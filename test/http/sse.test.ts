/**
 * The SSE plumbing on a real listener: heartbeats, a client going away, and a client too slow to
 * read, which is dropped instead of buffered for (memory stays bounded, others are not held up).
 */
import Fastify from 'fastify';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { AppEvent } from '../../src/actors/registry.js';
import type { Identity } from '../../src/auth/identity.js';
import { eventsRoutes } from '../../src/http/events-routes.js';
import { frame, SseStream, type SseClose } from '../../src/http/sse.js';
import { EventHub } from '../../src/services/event-hub.js';
import '../../src/http/types.js';
import { SseClient } from '../support/sse.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function listen(server: Server): Promise<number> {
  closers.push(
    () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
}

const user = (userId: string, role: 'user' | 'admin' = 'user'): Identity => ({
  userId,
  name: userId,
  role,
  scopes: [],
  mode: 'test',
});

const event = (app: string, owner: string): AppEvent => ({
  kind: 'phase',
  app_id: app,
  owner,
  phase: 'Ready',
  version: 1,
  reason: 'Running',
  message: 'serving version 1',
  time: new Date().toISOString(),
  initiator: 'user',
});

describe('SseStream', () => {
  it('splits multi-line data so that no line can end a frame early', () => {
    expect(frame('a\nb\r\nc', 'app')).toBe('event: app\ndata: a\ndata: b\ndata: c\n\n');
    expect(frame('one')).toBe('data: one\n\n');
    expect(frame('one', undefined, '3')).toBe('id: 3\ndata: one\n\n');
  });

  it('drops a client that stops reading, and keeps serving one that reads', async () => {
    const closes: SseClose[] = [];
    const streams: SseStream[] = [];
    const server = createServer((req, res) => {
      streams.push(
        new SseStream(req, res, {
          heartbeatMs: 0,
          maxBufferedBytes: 64 * 1024,
          onClose: (why) => closes.push(why),
        }),
      );
    });
    const port = await listen(server);
    // The slow one: a raw socket that sends its request and never reads a byte.
    const slow = connect(port, '127.0.0.1');
    slow.on('error', () => undefined); // reset by the server when dropped: expected
    slow.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    slow.pause();
    await until(() => streams.length === 1);
    const fast = await SseClient.open(`http://127.0.0.1:${port}/`);
    await until(() => streams.length === 2);
    const [slowStream, fastStream] = streams as [SseStream, SseStream];

    const chunk = 'x'.repeat(1024);
    let sent = 0;
    // Kernel buffers take a few MB before the server's own buffer grows; then the cap bites.
    while (slowStream.send(chunk) && sent < 200_000) {
      sent += 1;
      fastStream.send(`fast ${sent}`);
      if (sent % 256 === 0) await new Promise((r) => setImmediate(r));
    }
    expect(slowStream.closed).toBe(true);
    expect(sent).toBeLessThan(200_000);
    expect(closes).toEqual(['dropped']);
    expect(fastStream.send('after the drop')).toBe(true);
    await fast.waitFor((f) => f.data === 'after the drop', 'the fast client’s frame');
    fast.close();
    slow.destroy();
  });

  it('sends heartbeat comments and frees everything when the client goes', async () => {
    const closes: SseClose[] = [];
    const server = createServer((req, res) => {
      new SseStream(req, res, {
        heartbeatMs: 20,
        maxBufferedBytes: 4096,
        onClose: (w) => closes.push(w),
      });
    });
    const port = await listen(server);
    const client = await SseClient.open(`http://127.0.0.1:${port}/`);
    await client.waitFor((f) => f.comment === 'ping', 'a heartbeat');
    client.close();
    await until(() => closes.length > 0);
    expect(closes).toEqual(['client']);
  });
});

describe('/api/events fan-out', () => {
  it('gives each client its own apps, the admin all, with heartbeats; gone clients leave', async () => {
    const listeners = new Set<(e: AppEvent) => void>();
    const registry = {
      on(listener: (e: AppEvent) => void) {
        listeners.add(listener);
        return () => void listeners.delete(listener);
      },
    };
    const app = Fastify({ forceCloseConnections: true });
    app.addHook('onRequest', async (request) => {
      const who = String(request.headers['x-user']);
      request.identity = user(who, who === 'root' ? 'admin' : 'user');
    });
    await app.register(eventsRoutes(registry, { heartbeatMs: 20 }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    closers.push(() => app.close());
    const open = (who: string) =>
      fetchSse(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/events`, who);

    const [ann, ben, root] = await Promise.all([open('ann'), open('ben'), open('root')]);
    await ann.waitFor((f) => f.comment === 'ping', 'a heartbeat');
    expect(listeners.size).toBe(1); // one registry subscription, however many clients
    for (const e of [event('a1', 'ann'), event('b1', 'ben'), event('a2', 'ann')]) {
      for (const l of listeners) l(e);
    }
    await root.waitFor((f) => f.data?.includes('"a2"') ?? false, 'the last event');
    await ann.waitFor((f) => f.data?.includes('"a2"') ?? false, 'ann’s last event');
    const apps = (c: SseClient) =>
      c.frames
        .filter((f) => f.event === 'app')
        .map((f) => (JSON.parse(f.data ?? '{}') as AppEvent).app_id);
    expect(apps(root)).toEqual(['a1', 'b1', 'a2']);
    expect(apps(ann)).toEqual(['a1', 'a2']);
    await ben.waitFor((f) => f.data?.includes('"b1"') ?? false, 'ben’s event');
    expect(apps(ben)).toEqual(['b1']);

    for (const c of [ann, ben, root]) c.close();
    await until(() => listeners.size === 0);
  });
});

describe('EventHub', () => {
  it('drops a client whose sink throws; the others still get every event', () => {
    let listener: (e: AppEvent) => void = () => undefined;
    const logged: string[] = [];
    const hub = new EventHub({ on: (l) => ((listener = l), () => undefined) }, (_l, msg) =>
      logged.push(msg),
    );
    const got: string[] = [];
    hub.add(user('ann'), () => {
      throw new Error('socket gone');
    });
    hub.add(user('ann'), (e) => got.push(e.app_id));
    listener(event('a1', 'ann'));
    listener(event('a2', 'ann'));
    expect(got).toEqual(['a1', 'a2']);
    expect(hub.size).toBe(1);
    expect(logged).toHaveLength(1);
  });
});

function fetchSse(url: string, who: string): Promise<SseClient> {
  return SseClient.open(url, undefined, { 'x-user': who });
}

async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (done()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('condition never held');
}
