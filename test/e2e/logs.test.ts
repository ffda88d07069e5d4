/** Log streams over real HTTP with a real SSE client, against real sandboxes (spec §4 logs). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeApp } from '../support/apps.js';
import { deploy, fetchApp } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { SseClient } from '../support/sse.js';

const ALICE = 'alice-logs-key-0123456789';
const BOB = 'bob-logs-key-0123456789ab';
const TIMESTAMPED = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z /;

describe('log streams', () => {
  let server: TestServer;
  let url: string;
  const logs = (app: string, query = '') => `${server.baseURL}/v1/apps/${app}/logs${query}`;

  /** Snapshots until `done` holds: the app's output reaches the ring a moment after it prints. */
  async function snapshotWhere(
    app: string,
    done: (lines: string[]) => boolean,
  ): Promise<SseClient> {
    for (let i = 0; i < 200; i++) {
      const stream = await SseClient.open(logs(app), ALICE);
      await stream.ended;
      if (done(stream.lines)) return stream;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('the snapshot never showed the expected lines');
  }

  beforeAll(async () => {
    server = await startTestServer({
      auth: {
        apiKeys: [
          { key: ALICE, name: 'alice' },
          { key: BOB, name: 'bob' },
        ],
      },
      // <= 0 means the default of 10, never unlimited (design.md §6).
      limits: { maxConcurrentLogStreamsPerUser: 0 },
      runtime: { poolSize: 1 },
    });
    const res = await deploy(server.baseURL, ALICE, { name: 'chatty' }, await nodeApp('chatty'));
    expect(res.status).toBe(200);
    url = String(res.body.url);
  });
  afterAll(() => server.stop());

  it('sends the last 200 lines, timestamped, one event each, then closes', async () => {
    await fetchApp(`${url}/log?msg=snap&n=250`);
    const stream = await snapshotWhere(
      'chatty',
      (lines) => lines.at(-1)?.endsWith('snap-250') ?? false,
    );
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(stream.lines).toHaveLength(200);
    expect(stream.lines.every((l) => TIMESTAMPED.test(l))).toBe(true);
    expect(stream.lines[0]).toMatch(/ snap-51$/);
    expect(stream.failure).toBeUndefined();
  });

  it('follows: a line the app prints after the stream opened arrives on it', async () => {
    const stream = await SseClient.open(logs('chatty', '?follow=true'), ALICE);
    expect(stream.status).toBe(200);
    await fetchApp(`${url}/log?msg=printed-after-open`);
    const frame = await stream.waitFor(
      (f) => f.data?.endsWith(' printed-after-open') ?? false,
      'the new line',
    );
    expect(frame.data).toMatch(TIMESTAMPED);
    stream.close();
  });

  it('tags every line with its version and follows one version with ?version=', async () => {
    const res = await deploy(server.baseURL, ALICE, { name: 'twice' }, await nodeApp('one'));
    const twiceUrl = String(res.body.url);
    await deploy(server.baseURL, ALICE, { name: 'twice' }, await nodeApp('two'));
    const all = await SseClient.open(logs('twice'), ALICE);
    await all.ended;
    const tagged = all.frames.filter((f) => f.data !== undefined).map((f) => [f.id, f.data]);
    expect(tagged.map(([id]) => id)).toContain('1');
    expect(tagged.filter(([, data]) => data?.endsWith('booted two')).map(([id]) => id)).toEqual([
      '2',
    ]);
    const servingNote = tagged.find(([, data]) => data?.endsWith('[slipway] serving version 2'));
    expect(servingNote?.[0]).toBe('2');

    const first = await SseClient.open(logs('twice', '?follow=true&version=1'), ALICE);
    const second = await SseClient.open(logs('twice', '?follow=true&version=2'), ALICE);
    await first.waitFor((f) => f.data?.endsWith(' booted one') ?? false, 'the version 1 line');
    await fetchApp(`${twiceUrl}/log?msg=from-two`);
    await second.waitFor((f) => f.data?.endsWith(' from-two') ?? false, 'the version 2 line');
    second.close();
    // The delete ends the version 1 stream after anything sent to it before.
    await call(server.baseURL, '/v1/apps/twice', { method: 'DELETE', token: ALICE });
    await first.ended;
    expect(first.frames.at(-1)).toMatchObject({ event: 'error' });
    expect(first.lines.some((l) => l.endsWith('booted two') || l.endsWith('from-two'))).toBe(false);
  });

  it('checks ownership before the stream opens: 404 is plain JSON', async () => {
    for (const app of ['chatty', 'no-such-app']) {
      const res = await call(server.baseURL, `/v1/apps/${app}/logs?follow=true`, { token: BOB });
      expect(res.status, app).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body).toMatchObject({ code: 'not_found' });
    }
    expect((await call(server.baseURL, '/v1/apps/chatty/logs')).status).toBe(401);
    const bad = await call(server.baseURL, '/v1/apps/chatty/logs?follow=maybe', { token: ALICE });
    expect(bad).toMatchObject({ status: 400, body: { code: 'bad_request' } });
  });

  it('caps streams per user at 10: the 11th is 429 with Retry-After, the 10 stay open', async () => {
    const open: SseClient[] = [];
    for (let i = 0; i < 10; i++)
      open.push(await SseClient.open(logs('chatty', '?follow=true'), ALICE));
    expect(open.map((s) => s.status)).toEqual(Array(10).fill(200));

    const eleventh = await SseClient.open(logs('chatty', '?follow=true'), ALICE);
    expect(eleventh.status).toBe(429);
    expect(Number(eleventh.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(eleventh.body).toMatchObject({ code: 'too_many_log_streams' });
    // A snapshot is a stream too while it is being sent.
    expect((await SseClient.open(logs('chatty'), ALICE)).status).toBe(429);
    // The cap is per user: bob's own app is no business of alice's streams.
    await deploy(server.baseURL, BOB, { name: 'quiet' }, await nodeApp('quiet'));
    const bobs = await SseClient.open(`${server.baseURL}/v1/apps/quiet/logs?follow=true`, BOB);
    expect(bobs.status).toBe(200);
    bobs.close();

    await fetchApp(`${url}/log?msg=all-ten-hear-this`);
    for (const stream of open) {
      await stream.waitFor((f) => f.data?.endsWith(' all-ten-hear-this') ?? false, 'the line');
    }

    // Closing one frees its slot (once the server has seen the client go).
    open.pop()?.close();
    const again = await openWhenAllowed(logs('chatty', '?follow=true'));
    expect(again.status).toBe(200);
    for (const stream of [...open, again]) stream.close();
    // And every slot comes back: ten new streams open once the old ones are gone.
    const fresh: SseClient[] = [];
    for (let i = 0; i < 10; i++) fresh.push(await openWhenAllowed(logs('chatty', '?follow=true')));
    fresh.forEach((s) => s.close());
  });

  it('ends a followed stream with an `event: error` frame when the app is deleted', async () => {
    await deploy(server.baseURL, ALICE, { name: 'doomed' }, await nodeApp('doomed'));
    const stream = await openWhenAllowed(logs('doomed', '?follow=true'));
    const del = await call(server.baseURL, '/v1/apps/doomed', { method: 'DELETE', token: ALICE });
    expect(del.status).toBe(204);
    const frame = await stream.waitFor((f) => f.event === 'error', 'the error frame');
    expect(JSON.parse(frame.data ?? '{}')).toMatchObject({
      code: 'not_found',
      message: expect.any(String),
    });
    await stream.ended;
    expect(stream.failure).toBeUndefined();
    expect(stream.frames.at(-1)).toBe(frame);
  });

  it('still shows a Suspended app’s last lines', async () => {
    await fetchApp(`${url}/log?msg=before-suspend`);
    await snapshotWhere('chatty', (lines) => lines.some((l) => l.endsWith(' before-suspend')));
    const suspended = await call(server.baseURL, '/v1/apps/chatty/suspend', {
      method: 'POST',
      token: ALICE,
    });
    expect(suspended.body).toMatchObject({ phase: 'Suspended' });
    const stream = await openWhenAllowed(logs('chatty'));
    await stream.ended;
    expect(stream.lines.some((l) => l.endsWith(' before-suspend'))).toBe(true);
  });

  /** Opens a stream, retrying while the server has not yet seen closed ones go (429). */
  async function openWhenAllowed(target: string): Promise<SseClient> {
    for (let i = 0; i < 200; i++) {
      const stream = await SseClient.open(target, ALICE);
      if (stream.status !== 429) return stream;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error('no log stream slot came free');
  }
});
