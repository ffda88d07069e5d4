/**
 * Issue 29, over real HTTP against the real server (SQLite, bubblewrap sandboxes): the owner's
 * per-app activity feed and its scoping, audit rows that say what happened (a rollback's from
 * and to, an update's fields, a refusal's reason), users and departments audited, and who
 * deployed each version.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, waitForPhase } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { deployStatic } from '../support/share.js';
import { tarGz } from '../support/tarball.js';

const ALICE = 'alice-feed-key-0123456789ab';
const BOB = 'bob-feed-key-0123456789abcd';
const ADMIN = 'ops-feed-key-0123456789abcd';

interface AuditEvent {
  actor: string;
  action: string;
  target: string;
  outcome: string;
  details?: {
    version?: number;
    rollback?: { from?: number; to: number };
    changes?: { field: string; from?: string; to?: string }[];
    reason?: string;
    message?: string;
  };
}

describe('the per-app activity feed and what audit rows say', { timeout: 180_000 }, () => {
  let server: TestServer;
  let base: string;
  const feed = async (app: string, token: string) => {
    const res = await call(base, `/v1/apps/${app}/audit`, { token });
    return { status: res.status, body: res.body as { events: AuditEvent[]; code?: string } };
  };
  const trail = async (query: string) => {
    const res = await call(base, `/v1/audit${query}`, { token: ADMIN });
    expect(res.status, res.text).toBe(200);
    return (res.body as { events: AuditEvent[] }).events;
  };

  beforeAll(async () => {
    server = await startTestServer({
      auth: {
        apiKeys: [
          { key: ALICE, name: 'alice' },
          { key: BOB, name: 'bob' },
          { key: ADMIN, name: 'ops', role: 'admin' },
        ],
      },
      runtime: { poolSize: 1 },
    });
    base = server.baseURL;
    await deployStatic(base, ALICE, 'diary', 'one');
    await deployStatic(base, ALICE, 'diary', 'two');
    await deployStatic(base, BOB, 'ledger');
  });
  afterAll(() => server?.stop());

  it('records a rollback with the version it left and the one it restored, and who deployed each version', async () => {
    const res = await call(base, '/v1/apps/diary/rollback', {
      method: 'POST',
      token: ALICE,
      json: { version: 1 },
    });
    expect([200, 202], res.text).toContain(res.status);
    await waitForPhase(base, ALICE, 'diary', ['Ready']);
    const [rollback] = await trail('?app=diary&action=deploy&limit=1');
    expect(rollback).toMatchObject({
      actor: 'apikey-alice',
      action: 'deploy',
      outcome: 'ok',
      details: { version: 3, rollback: { from: 2, to: 1 } },
    });

    const versions = await call(base, '/v1/apps/diary/versions', { token: ALICE });
    const items = (versions.body as { items: { version: number; deployed_by?: string }[] }).items;
    expect(items.map((v) => [v.version, v.deployed_by])).toEqual([
      [3, 'apikey-alice'],
      [2, 'apikey-alice'],
      [1, 'apikey-alice'],
    ]);
  });

  it('records an access change with the field, from and to', async () => {
    const res = await call(base, '/v1/apps/diary', {
      method: 'PATCH',
      token: ALICE,
      json: { access: 'private' },
    });
    expect(res.status, res.text).toBe(200);
    const [update] = await trail('?app=diary&action=update&limit=1');
    expect(update).toMatchObject({
      outcome: 'ok',
      details: { changes: [{ field: 'access', from: 'public', to: 'private' }] },
    });
  });

  it('records the reason of a denied deploy', async () => {
    const res = await deploy(base, BOB, { name: 'diary' }, await tarGz({ 'index.html': 'x' }));
    expect(res.status).toBe(409);
    const code = (res.body as { code: string }).code;
    const [denied] = await trail('?actor=apikey-bob&app=diary&limit=1');
    expect(denied).toMatchObject({
      action: 'deploy',
      outcome: 'denied',
      details: { reason: code },
    });
    expect(denied?.details?.message).toEqual((res.body as { message: string }).message);
  });

  it("shows the owner their app's feed, never another owner's: 404 as for the app itself", async () => {
    const mine = await feed('diary', ALICE);
    expect(mine.status).toBe(200);
    const actions = mine.body.events.map((e) => `${e.actor} ${e.action} ${e.outcome}`);
    expect(actions).toContain('apikey-alice update ok');
    expect(actions).toContain('apikey-bob deploy denied');
    expect(actions.filter((a) => a === 'apikey-alice deploy ok')).toHaveLength(3);
    expect(mine.body.events.every((e) => e.target === 'diary')).toBe(true);

    const foreign = await feed('ledger', ALICE);
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe('not_found');
    expect((await feed('diary', BOB)).status).toBe(404);
    expect((await feed('nothing-here', ALICE)).status).toBe(404);
    expect((await call(base, '/v1/apps/diary/audit')).status).toBe(401);
    expect((await feed('diary', ADMIN)).body.events).toEqual(mine.body.events);
    expect((await call(base, '/v1/apps/diary/audit?limit=0', { token: ALICE })).status).toBe(400);
  });

  it('does not show a new owner of a name the rows of the app that had it before', async () => {
    expect((await call(base, '/v1/apps/diary', { method: 'DELETE', token: ALICE })).status).toBe(
      204,
    );
    await deployStatic(base, BOB, 'diary');
    const events = (await feed('diary', BOB)).body.events;
    expect(events.map((e) => `${e.actor} ${e.action}`)).toEqual(['apikey-bob deploy']);
  });

  it('audits creating and changing users and departments, with what changed', async () => {
    const admin = { token: ADMIN, method: 'POST' };
    expect(
      (await call(base, '/api/departments', { ...admin, json: { id: 'eng', name: 'Eng' } })).status,
    ).toBe(201);
    const made = await call(base, '/api/users', { ...admin, json: { name: 'carol' } });
    expect(made.status).toBe(201);
    const key = (made.body as { api_key: string }).api_key;
    const patch = (path: string, json: object) =>
      call(base, path, { token: ADMIN, method: 'PATCH', json });
    expect(
      (await patch('/api/users/apikey-carol', { role: 'admin', department: 'eng' })).status,
    ).toBe(200);
    expect((await patch('/api/departments/eng', { name: 'Engineering' })).status).toBe(200);
    const again = await call(base, '/api/users', { ...admin, json: { name: 'carol' } });
    expect(again.status).toBe(409);

    const rows = await trail('?actor=apikey-ops');
    const of = (action: string) => rows.filter((e) => e.action === action);
    expect(of('department.create')[0]).toMatchObject({
      target: 'eng',
      outcome: 'ok',
      details: { changes: [{ field: 'name', to: 'Eng' }] },
    });
    expect(of('user.create').map((e) => e.outcome)).toEqual(['denied', 'ok']);
    expect(of('user.create')[0]?.details?.reason).toBe('name_taken');
    expect(of('user.create')[1]).toMatchObject({ target: 'apikey-carol', outcome: 'ok' });
    expect(of('user.update')[0]).toMatchObject({
      target: 'apikey-carol',
      details: {
        changes: [
          { field: 'role', from: 'user', to: 'admin' },
          { field: 'department', to: 'eng' },
        ],
      },
    });
    expect(of('department.update')[0]?.details?.changes).toEqual([
      { field: 'name', from: 'Eng', to: 'Engineering' },
    ]);
    // Never the new user's key.
    expect(JSON.stringify(rows)).not.toContain(key);
    expect((await trail('?action=user.create')).length).toBe(2);
  });
});
