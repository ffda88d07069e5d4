/**
 * /api/events and GET /v1/audit over real HTTP with real SSE clients: two users and an admin see
 * only what they may (spec §4, §6; design.md §7).
 */
import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeApp } from '../support/apps.js';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { SseClient } from '../support/sse.js';
import { tarGz } from '../support/tarball.js';

const ALICE = 'alice-audit-key-0123456789';
const BOB = 'bob-audit-key-0123456789ab';
const ADMIN = 'ops-audit-key-0123456789ab';
const READER = 'reader-audit-key-012345678';
const keys = [
  { key: ALICE, name: 'alice', department: 'eng' },
  { key: BOB, name: 'bob' },
  { key: ADMIN, name: 'ops', role: 'admin' as const },
  { key: READER, name: 'reader', scopes: ['read'] },
];

interface AppEvent {
  kind: string;
  app_id: string;
  owner: string;
  phase: string;
  version: number;
  reason: string;
  message: string;
  time: string;
  initiator: string;
}
interface AuditEvent {
  id: string;
  time: string;
  actor: string;
  action: string;
  target: string;
  outcome: string;
  tenant_id: string;
  source_hash: string;
}

const site = (text: string) => tarGz({ 'index.html': `<p>${text}</p>` });
const appEvents = (stream: SseClient): AppEvent[] =>
  stream.frames.filter((f) => f.event === 'app').map((f) => JSON.parse(f.data ?? '{}') as AppEvent);

describe('events and audit, two users and an admin', () => {
  let server: TestServer;
  const audit = async (query = '', token = ADMIN) => {
    const res = await call(server.baseURL, `/v1/audit${query}`, { token });
    return {
      status: res.status,
      body: res.body,
      events: (res.body as { events: AuditEvent[] }).events,
    };
  };

  beforeAll(async () => {
    server = await startTestServer({ auth: { apiKeys: keys }, runtime: { poolSize: 1 } });
  });
  afterAll(() => server.stop());

  it('streams each user only their apps’ events, and the admin all of them', async () => {
    const alice = await SseClient.open(`${server.baseURL}/api/events`, ALICE);
    const bob = await SseClient.open(`${server.baseURL}/api/events`, BOB);
    expect([alice.status, bob.status]).toEqual([200, 200]);
    expect(alice.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await alice.waitFor((f) => f.comment === 'connected', 'the opening comment');
    // The admin's stream through the `eventsource` package, as a dashboard would read it.
    const seenByAdmin: AppEvent[] = [];
    const admin = new EventSource(`${server.baseURL}/api/events`, {
      fetch: (input, init) =>
        fetch(input, { ...init, headers: { ...init.headers, authorization: `Bearer ${ADMIN}` } }),
    });
    admin.addEventListener('app', (e) => seenByAdmin.push(JSON.parse(e.data) as AppEvent));
    await new Promise<void>((resolve, reject) => {
      admin.onopen = () => resolve();
      admin.onerror = (e) => reject(new Error(`admin stream: ${e.message}`));
    });

    try {
      expect((await deploy(server.baseURL, BOB, { name: 'bob-ev' }, await site('b'))).status).toBe(
        200,
      );
      expect(
        (await deploy(server.baseURL, ALICE, { name: 'alice-ev' }, await site('a'))).status,
      ).toBe(200);
      await call(server.baseURL, '/v1/apps/alice-ev', { method: 'DELETE', token: ALICE });
      await call(server.baseURL, '/v1/apps/bob-ev/suspend', { method: 'POST', token: BOB });

      // Events go out in order: by the time each sees its own last event, it has seen all it may.
      await alice.waitFor((f) => f.data?.includes('"kind":"delete"') ?? false, 'alice’s delete');
      await bob.waitFor((f) => f.data?.includes('"kind":"suspend"') ?? false, 'bob’s suspend');
      await waitUntil(() => seenByAdmin.some((e) => e.kind === 'suspend'), 'the admin’s suspend');

      expect(new Set(appEvents(alice).map((e) => e.app_id))).toEqual(new Set(['alice-ev']));
      expect(new Set(appEvents(bob).map((e) => e.app_id))).toEqual(new Set(['bob-ev']));
      expect(new Set(seenByAdmin.map((e) => e.app_id))).toEqual(new Set(['alice-ev', 'bob-ev']));

      const kinds = appEvents(alice).map((e) => `${e.kind}:${e.phase}`);
      expect(kinds[0]).toBe('deploy:Pending');
      expect(kinds).toContain('phase:Ready');
      expect(kinds.at(-1)).toBe('delete:Deleted');
      expect(appEvents(alice)[0]).toEqual({
        kind: 'deploy',
        app_id: 'alice-ev',
        owner: 'apikey-alice',
        phase: 'Pending',
        version: 1,
        reason: 'Queued',
        message: expect.any(String),
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
        initiator: 'user',
        // A deploy is in flight from its first event on (issue 29).
        activity: { step: 'queued', since: expect.stringMatching(/Z$/) },
        poll_after_seconds: 2,
      });
      expect(appEvents(bob).find((e) => e.kind === 'suspend')).toMatchObject({
        kind: 'suspend',
        phase: 'Suspended',
        initiator: 'user',
      });
      expect(alice.failure).toBeUndefined();
    } finally {
      admin.close();
      alice.close();
      bob.close();
    }
  });

  it('audits deploys, rollbacks, suspends, resumes and deletes with actor, tenant and hash', async () => {
    await deploy(server.baseURL, ALICE, { name: 'ledger' }, await nodeApp('l1'));
    await deploy(server.baseURL, ALICE, { name: 'ledger' }, await nodeApp('l2'));
    await call(server.baseURL, '/v1/apps/ledger/rollback', {
      method: 'POST',
      token: ALICE,
      json: { version: 1 },
    });
    await call(server.baseURL, '/v1/apps/ledger/suspend', { method: 'POST', token: ALICE });
    await call(server.baseURL, '/v1/apps/ledger/resume', { method: 'POST', token: ALICE });
    await call(server.baseURL, '/v1/apps/ledger', { method: 'DELETE', token: ALICE });

    const { events } = await audit('?app=ledger');
    expect(events.map((e) => `${e.action}:${e.outcome}`).reverse()).toEqual([
      'deploy:ok',
      'deploy:ok',
      'deploy:ok',
      'suspend:ok',
      'resume:ok',
      'delete:ok',
    ]);
    for (const e of events) {
      expect(e).toMatchObject({ actor: 'apikey-alice', target: 'ledger', tenant_id: 'eng' });
      expect(e.id).toEqual(expect.any(String));
      expect(e.source_hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    }
    const [deleted, resumed, suspended, rolled, second, first] = events;
    // The rollback restored version 1's source; the later actions concern what ran then.
    expect(rolled?.source_hash).toBe(first?.source_hash);
    expect(second?.source_hash).not.toBe(first?.source_hash);
    expect([suspended, resumed, deleted].map((e) => e?.source_hash)).toEqual(
      Array(3).fill(first?.source_hash),
    );
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    const times = events.map((e) => e.time);
    expect([...times].sort().reverse()).toEqual(times);
  });

  it('audits refused attempts as denied, under the caller’s tenant', async () => {
    await deploy(server.baseURL, ALICE, { name: 'guarded' }, await site('mine'));
    const taken = await deploy(server.baseURL, BOB, { name: 'guarded' }, await site('yours'));
    expect(taken.status).toBe(409);
    const del = await call(server.baseURL, '/v1/apps/guarded', { method: 'DELETE', token: BOB });
    expect(del.status).toBe(404);
    const scoped = await deploy(server.baseURL, READER, { name: 'reader-app' }, await site('r'));
    expect(scoped).toMatchObject({ status: 403, body: { code: 'policy_denied' } });
    // No app has that name: nothing was acted on, nothing recorded.
    await call(server.baseURL, '/v1/apps/nobody-home', { method: 'DELETE', token: BOB });

    const bobs = (await audit('?actor=apikey-bob&app=guarded')).events;
    expect(
      bobs.map((e) => `${e.action}:${e.target}:${e.outcome}:${e.tenant_id}`).reverse(),
    ).toEqual(['deploy:guarded:denied:apikey-bob', 'delete:guarded:denied:apikey-bob']);
    expect(bobs[1]?.source_hash).toMatch(/^sha256:/);
    const reader = (await audit('?actor=apikey-reader')).events;
    expect(reader).toMatchObject([{ action: 'deploy', target: 'reader-app', outcome: 'denied' }]);
    expect((await call(server.baseURL, '/v1/apps/guarded', { token: ALICE })).status).toBe(200);
  });

  it('audits the idle suspend and the wake on request as the system', async () => {
    const res = await deploy(server.baseURL, BOB, { name: 'dozy', ttl: '1s' }, await site('zz'));
    expect(res.status).toBe(200);
    await waitForPhase(server.baseURL, BOB, 'dozy', ['Suspended']);
    expect((await fetchApp(String(res.body.url))).status).toBe(200);
    const { events } = await audit('?app=dozy&actor=system');
    expect(events.map((e) => e.action).reverse()).toEqual(
      expect.arrayContaining(['suspend', 'resume']),
    );
    expect(events.at(-1)).toMatchObject({
      action: 'suspend',
      outcome: 'ok',
      tenant_id: 'apikey-bob',
    });
    expect(events.find((e) => e.action === 'resume')).toMatchObject({
      actor: 'system',
      outcome: 'ok',
    });
  });

  it('serves the audit trail to admins only, filtered, newest first, append-only', async () => {
    for (const token of [ALICE, BOB, READER]) {
      expect(await audit('', token)).toMatchObject({ status: 403, body: { code: 'forbidden' } });
      expect((await audit('?limit=0', token)).status).toBe(403);
    }
    expect((await call(server.baseURL, '/v1/audit')).status).toBe(401);
    const all = await audit();
    expect(all.status).toBe(200);
    expect(all.events.length).toBeGreaterThan(10);
    expect((await audit('?limit=2')).events).toEqual(all.events.slice(0, 2));
    expect((await audit('?action=delete')).events.every((e) => e.action === 'delete')).toBe(true);
    expect((await audit('?action=delete')).events.length).toBeGreaterThan(0);
    for (const bad of ['?limit=0', '?limit=1001', '?action=create', '?limit=x']) {
      expect(await audit(bad), bad).toMatchObject({ status: 400, body: { code: 'bad_request' } });
    }
    for (const method of ['DELETE', 'POST', 'PUT', 'PATCH']) {
      const res = await call(server.baseURL, '/v1/audit', { method, token: ADMIN });
      expect(res.status, method).toBeGreaterThanOrEqual(404);
      expect(res.status, method).toBeLessThan(406);
    }
    expect((await audit()).events.slice(0, all.events.length)).toEqual(all.events);
  });
});

describe('with auth disabled every caller is admin', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ auth: { enabled: false }, runtime: { poolSize: 0 } });
  });
  afterAll(() => server.stop());

  it('sees every app’s events and the audit trail', async () => {
    const stream = await SseClient.open(`${server.baseURL}/api/events`);
    expect(stream.status).toBe(200);
    await deploy(server.baseURL, undefined, { name: 'open-app' }, await site('o'));
    await stream.waitFor((f) => f.data?.includes('"phase":"Ready"') ?? false, 'the Ready event');
    stream.close();
    const res = await call(server.baseURL, '/v1/audit');
    expect(res.status).toBe(200);
    expect((res.body as { events: AuditEvent[] }).events[0]).toMatchObject({
      actor: 'admin',
      action: 'deploy',
      target: 'open-app',
      outcome: 'ok',
    });
  });
});

async function waitUntil(done: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (done()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`never saw ${what}`);
}
