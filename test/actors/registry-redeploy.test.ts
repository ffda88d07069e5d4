import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { flush, stage, useFakeClock, world, type World } from './harness.js';

let w: World;
beforeEach(() => {
  useFakeClock();
  w = world();
});
afterEach(async () => {
  await w.registry.stop();
  expect(w.logs.filter((l) => l.level === 'error')).toEqual([]);
  vi.useRealTimers();
});

const row = (id = 'web') => w.store.getApp(id);

describe('redeploy', () => {
  it('keeps the old sandbox serving until the new one is Ready, then reaps it', async () => {
    stage(w, 'web', 1);
    await w.registry.deploy('web', 1);
    const old = w.registry.serving('web');
    w.runtime.manual = true;
    stage(w, 'web', 2);
    const done = w.registry.deploy('web', 2, { waitMs: 60_000 });
    for (const phase of ['Pending', 'Claiming', 'Starting']) {
      expect(row()?.phase).toBe(phase);
      expect(await w.registry.route('web', { waitMs: 0 })).toBe(old);
      if (phase === 'Claiming') w.runtime.settleClaim('newest', 'ok');
      await flush();
    }
    w.runtime.settleInject('ok');
    expect(await done).toMatchObject({
      phase: 'Ready',
      currentVersion: 2,
      message: 'serving version 2',
    });
    await flush();
    expect(w.registry.serving('web')).not.toBe(old);
    expect(w.runtime.live('web').map((s) => s.id)).toEqual([w.registry.serving('web')?.id]);
    // The old sandbox was reaped on purpose: its exit is not the app crashing.
    expect(w.registry.logs('web').map((l) => l.text)).not.toContain(
      'app exited with signal SIGKILL',
    );
  });

  it('says it switches the traffic before Ready on a redeploy, never on a first deploy', async () => {
    stage(w, 'web', 1);
    await w.registry.deploy('web', 1);
    const steps = () => w.events.flatMap((e) => (e.activity ? [e.activity.step] : [e.phase]));
    expect(steps()).not.toContain('switching');
    w.events.length = 0;
    w.runtime.manual = true;
    stage(w, 'web', 2);
    const done = w.registry.deploy('web', 2, { waitMs: 60_000 });
    await flush();
    w.runtime.settleClaim('newest', 'ok');
    await flush();
    w.runtime.settleInject('ok');
    await done;
    const seen = steps();
    expect(seen.slice(seen.indexOf('switching'))).toEqual(['switching', 'Ready']);
    expect(w.registry.activity('web')).toBeUndefined();
    const notes = w.registry.logs('web').map((l) => l.text);
    expect(notes.indexOf('[slipway] switching traffic to version 2')).toBeGreaterThanOrEqual(0);
    expect(notes.indexOf('[slipway] switching traffic to version 2')).toBeLessThan(
      notes.indexOf('[slipway] serving version 2'),
    );
  });

  it('lets a newer deploy supersede one in flight and reaps the late sandbox', async () => {
    w.runtime.manual = true;
    stage(w, 'web', 1);
    const first = w.registry.deploy('web', 1, { waitMs: 60_000 });
    await flush();
    expect(w.runtime.claims).toHaveLength(1);
    stage(w, 'web', 2);
    const second = w.registry.deploy('web', 2, { waitMs: 60_000 });
    expect(await first).toMatchObject({ phase: 'Pending', currentVersion: 2 }); // superseded: returns at once
    await flush();
    const late = w.runtime.settleClaim('oldest', 'ok');
    await flush();
    expect(late?.reaped).toBe(true);
    expect(row()?.phase).toBe('Claiming');
    w.runtime.settleClaim('newest', 'ok');
    await flush();
    w.runtime.settleInject('ok');
    expect(await second).toMatchObject({ phase: 'Ready', currentVersion: 2 });
    expect(w.runtime.injected.map((s) => s.version)).toEqual([2]);
    expect(w.runtime.live('web')).toHaveLength(1);
  });

  it('serializes concurrent deploys of one name: the last one wins, nothing leaks', async () => {
    stage(w, 'web', 1);
    stage(w, 'web', 2);
    const [a, b] = await Promise.all([w.registry.deploy('web', 1), w.registry.deploy('web', 2)]);
    expect(a.currentVersion).toBe(2);
    expect(b).toMatchObject({ phase: 'Ready', currentVersion: 2 });
    expect(w.runtime.live('web')).toHaveLength(1);
    expect(w.runtime.injected.map((s) => s.version)).toEqual([2]);
  });
});

describe('blue/green', () => {
  it('keeps serving the live version when a candidate fails, and records the failure', async () => {
    stage(w, 'web', 1);
    await w.registry.deploy('web', 1);
    const live = w.registry.serving('web');
    stage(w, 'web', 2);
    w.runtime.injectScript.push({ code: 1, signal: null, lastLines: ['boom'] });
    expect(await w.registry.deploy('web', 2)).toMatchObject({
      phase: 'Ready',
      reason: 'Running',
      currentVersion: 1,
      liveVersion: 1,
      lastDeploy: { version: 2, outcome: 'Failed', reason: 'AppExited' },
    });
    expect(w.registry.serving('web')).toBe(live);
    expect(w.store.getVersion('web', 1)).toMatchObject({ outcome: 'Ready' });
    expect(w.store.getVersion('web', 2)).toMatchObject({ outcome: 'Failed', reason: 'AppExited' });
    expect(w.registry.logs('web', 2).map((l) => l.text)).toEqual([
      '[slipway] version 2 starting',
      '[slipway] version 2 failed: AppExited: version 2 exited with code 1 before it answered; version 1 is still serving',
    ]);
  });

  it('goes back to the live version, Suspended, when a candidate fails while nothing runs', async () => {
    stage(w, 'web', 1);
    await w.registry.deploy('web', 1);
    await w.registry.suspend('web');
    stage(w, 'web', 2);
    w.runtime.injectScript.push({ code: 1, signal: null, lastLines: ['boom'] });
    expect(await w.registry.deploy('web', 2)).toMatchObject({
      phase: 'Suspended',
      currentVersion: 1,
      liveVersion: 1,
      lastDeploy: { version: 2, outcome: 'Failed' },
    });
    const woken = await w.registry.route('web');
    expect(woken).toBeDefined();
    expect(row()).toMatchObject({ phase: 'Ready', currentVersion: 1 });
    expect(w.runtime.injected.map((s) => s.version)).toEqual([1, 2, 1]);
  });

  it("runs a version with its release's idle ttl, not the app row's", async () => {
    stage(w, 'web', 1, { ttl: '30m' });
    const v1 = w.store.getVersion('web', 1) ?? fail();
    // As a rollback stores it: the restored release's ttl on the version, the app row unchanged.
    const sourceKey = `web.v2.${'0'.repeat(31)}2`;
    w.store.addVersion({ ...v1, version: 2, ttl: '1s', sourceKey });
    w.sources.blobs.set(sourceKey, Buffer.from('source 2'));
    await w.registry.deploy('web', 2);
    await vi.advanceTimersByTimeAsync(1_100);
    await flush();
    // Suspended after the release's 1 s, and the row now shows the ttl of the release that serves.
    expect(row()).toMatchObject({ phase: 'Suspended', reason: 'Idle', ttl: '1s' });
  });

  it('marks a deploy superseded before it served', async () => {
    w.runtime.manual = true;
    stage(w, 'web', 1);
    const first = w.registry.deploy('web', 1, { waitMs: 60_000 });
    stage(w, 'web', 2);
    const second = w.registry.deploy('web', 2, { waitMs: 60_000 });
    await first;
    await flush();
    expect(w.store.getVersion('web', 1)).toMatchObject({ outcome: 'Failed', reason: 'Superseded' });
    w.runtime.settleClaim('newest', 'ok');
    await flush();
    w.runtime.settleInject('ok');
    expect(await second).toMatchObject({ phase: 'Ready', liveVersion: 2 });
    expect(w.store.getVersion('web', 2)).toMatchObject({ outcome: 'Ready' });
  });
});

describe('idle TTL', () => {
  it('suspends after ttl without requests, pushed by touch; route() wakes it', async () => {
    stage(w, 'web', 1, { ttl: '1s' });
    await w.registry.deploy('web', 1);
    const first = w.registry.serving('web');
    await vi.advanceTimersByTimeAsync(600);
    w.registry.touch('web');
    await vi.advanceTimersByTimeAsync(600); // 1.2s after Ready, 0.6s after the request
    expect(row()?.phase).toBe('Ready');
    await vi.advanceTimersByTimeAsync(400);
    await flush();
    expect(row()).toMatchObject({
      phase: 'Suspended',
      reason: 'Idle',
      message: 'suspended after 1s without requests',
    });
    expect(first && w.runtime.live('web')).toEqual([]);
    expect(w.events.find((e) => e.kind === 'suspend')).toMatchObject({
      initiator: 'system',
      phase: 'Suspended',
    });
    const woken = await w.registry.route('web');
    expect(woken?.id).toBe(w.runtime.live('web')[0]?.id);
    expect(row()?.phase).toBe('Ready');
    expect(w.events.find((e) => e.kind === 'resume')).toMatchObject({ initiator: 'system' });
  });

  it('suspends and resumes on request, as the user', async () => {
    stage(w, 'web', 1);
    await w.registry.deploy('web', 1);
    expect(await w.registry.suspend('web')).toMatchObject({
      phase: 'Suspended',
      reason: 'Suspended',
    });
    await flush();
    expect(w.runtime.live('web')).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
    expect(await w.registry.resume('web')).toMatchObject({ phase: 'Ready' });
    expect(
      w.events
        .filter((e) => e.kind === 'suspend' || e.kind === 'resume')
        .map((e) => [e.kind, e.initiator]),
    ).toEqual([
      ['suspend', 'user'],
      ['resume', 'user'],
    ]);
  });

  it('never suspends with ttl 0', async () => {
    stage(w, 'web', 1, { ttl: '0' });
    await w.registry.deploy('web', 1);
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(24 * 3_600_000);
    expect(row()?.phase).toBe('Ready');
  });
});

function fail(): never {
  throw new Error('missing row');
}
