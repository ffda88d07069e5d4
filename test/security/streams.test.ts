/**
 * Issue #9 item 5: `/api/events` held one socket per stream without bound (one user kept 19,830
 * open and the server stopped accepting). Event streams now have the per-user cap of log streams,
 * and every stream, log or event, counts against a server-wide cap.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { deployStatic } from '../support/share.js';
import { SseClient } from '../support/sse.js';

const ALICE = 'alice-streams-key-0123456789';
const BOB = 'bob-streams-key-0123456789ab';
const CAROL = 'carol-streams-key-0123456789';
const keys = [
  { key: ALICE, name: 'alice' },
  { key: BOB, name: 'bob' },
  { key: CAROL, name: 'carol' },
];

describe('streaming connections are capped per user and server-wide', () => {
  let server: TestServer;
  let base: string;
  const open: SseClient[] = [];
  const events = async (token: string): Promise<SseClient> => {
    const client = await SseClient.open(`${base}/api/events`, token);
    open.push(client);
    return client;
  };
  const logs = async (token: string, app: string): Promise<SseClient> => {
    const client = await SseClient.open(`${base}/v1/apps/${app}/logs?follow=true`, token);
    open.push(client);
    return client;
  };

  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: keys },
      limits: { maxConcurrentLogStreamsPerUser: 3, maxStreams: 5 },
      runtime: { poolSize: 1 },
    });
    base = server.baseURL;
    await deployStatic(base, CAROL, 'carol-app');
  });
  afterEach(async () => {
    for (const client of open.splice(0)) client.close();
    // The server frees a slot when it sees the client go: wait until all are free again.
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const probe = await SseClient.open(`${base}/api/events`, ALICE);
      probe.close();
      if (probe.status === 200) return;
      await new Promise((r) => setTimeout(r, 50));
    }
  });
  afterAll(() => server.stop());

  it('answers the event stream past the per-user cap with 429 too_many_streams and Retry-After', async () => {
    for (let i = 0; i < 3; i += 1) expect((await events(ALICE)).status).toBe(200);
    const refused = await events(ALICE);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(refused.body).toMatchObject({
      code: 'too_many_streams',
      message: expect.any(String),
      details: { limit: 3 },
    });
    // Another user is not affected by alice's streams.
    expect((await events(BOB)).status).toBe(200);
  });

  it('frees the slot when a stream closes', async () => {
    const first = await events(ALICE);
    for (let i = 0; i < 2; i += 1) expect((await events(ALICE)).status).toBe(200);
    expect((await events(ALICE)).status).toBe(429);
    first.close();
    const deadline = Date.now() + 10_000;
    let again = await events(ALICE);
    while (again.status !== 200 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      again = await events(ALICE);
    }
    expect(again.status).toBe(200);
  });

  it('counts log and event streams of every user against the server-wide cap', async () => {
    for (let i = 0; i < 3; i += 1) expect((await events(ALICE)).status).toBe(200);
    expect((await logs(CAROL, 'carol-app')).status).toBe(200);
    expect((await events(BOB)).status).toBe(200);
    // Five open: bob's second stream is within his own cap, but not within the server's.
    const refused = await events(BOB);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(refused.body).toMatchObject({ code: 'too_many_streams', details: { limit: 5 } });
    const refusedLogs = await logs(CAROL, 'carol-app');
    expect(refusedLogs.status).toBe(429);
    expect(refusedLogs.body).toMatchObject({ code: 'too_many_streams' });
  });
});
