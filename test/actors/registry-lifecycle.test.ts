import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RuntimeError } from '../../src/runtime/runtime.js';
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

describe('delete', () => {
  /** Brings `web` into a phase with the runtime in manual mode. */
  const into: Record<string, () => Promise<void>> = {
    Pending: async () => void w.registry.deploy('web', 1, { waitMs: 0 }),
    Claiming: async () => {
      void w.registry.deploy('web', 1, { waitMs: 0 });
      await flush();
    },
    Starting: async () => {
      await into.Claiming?.();
      w.runtime.settleClaim('newest', 'ok');
      await flush();
    },
    Ready: async () => {
      await into.Starting?.();
      w.runtime.settleInject('ok');
      await flush();
    },
    Redeploying: async () => {
      await into.Ready?.();
      stage(w, 'web', 2);
      void w.registry.deploy('web', 2, { waitMs: 0 });
      await flush();
      w.runtime.settleClaim('newest', 'ok');
      await flush();
    },
    Suspended: async () => {
      await into.Ready?.();
      await w.registry.suspend('web');
    },
    Failed: async () => {
      await into.Starting?.();
      w.runtime.settleInject(new RuntimeError('bad', false));
      await flush();
    },
  };

  for (const phase of Object.keys(into)) {
    it(`from ${phase}: reaps every sandbox, cancels timers, removes rows and blobs`, async () => {
      w.runtime.manual = true;
      stage(w, 'web', 1);
      await into[phase]?.();
      expect(row()?.phase).toBe(phase === 'Redeploying' ? 'Starting' : phase);
      await w.registry.delete('web');
      expect(row()).toBeUndefined();
      expect(w.store.listVersions('web')).toEqual([]);
      expect(w.sources.blobs.size).toBe(0);
      expect(w.runtime.live('web')).toEqual([]);
      expect(vi.getTimerCount()).toBe(0);
      expect(w.events.at(-1)).toMatchObject({
        kind: 'delete',
        phase: 'Deleted',
        initiator: 'user',
      });
      // A claim still in flight lands after the delete: it is reaped, never served.
      while (w.runtime.claims.length > 0) w.runtime.settleClaim('newest', 'ok');
      await flush();
      expect(w.runtime.live('web')).toEqual([]);
      expect(await w.registry.route('web', { waitMs: 0 })).toBeUndefined();
    });
  }
});

describe('restart', () => {
  it('brings Ready apps back serving, leaves Suspended and Failed ones alone', async () => {
    for (const id of ['ready', 'asleep', 'broken']) stage(w, id, 1);
    await w.registry.deploy('ready', 1);
    await w.registry.deploy('asleep', 1);
    await w.registry.suspend('asleep');
    w.runtime.injectScript.push(new RuntimeError('bad', false));
    await w.registry.deploy('broken', 1);
    const before = w.runtime.sandboxes.length;
    const registry = await w.restart();
    const sandbox = await registry.route('ready');
    expect(sandbox?.id).toBe(`sb-${before + 1}`); // a fresh claim: the old process's sandboxes died with it
    expect(w.runtime.live().map((s) => s.id)).toEqual([sandbox?.id]);
    expect(row('ready')).toMatchObject({ phase: 'Ready', currentVersion: 1 });
    expect(w.runtime.injected.map((s) => s.appId)).toEqual(['ready', 'asleep', 'broken', 'ready']);
    expect(row('asleep')?.phase).toBe('Suspended');
    expect(row('broken')).toMatchObject({ phase: 'Failed', reason: 'StartFailed' });
    expect(w.runtime.sandboxes.length).toBe(before + 1);
  });

  it('re-arms a pending claim retry at its stored deadline', async () => {
    stage(w, 'web', 1);
    w.runtime.claimScript.push(new RuntimeError('pool empty', true));
    void w.registry.deploy('web', 1, { waitMs: 0 });
    await flush();
    const due = JSON.parse(row()?.snapshot ?? '{}').context.retryAt as number;
    await vi.advanceTimersByTimeAsync(4);
    await w.restart();
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(due - Date.now() - 1);
    expect(w.runtime.sandboxes).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    await flush();
    expect(row()?.phase).toBe('Ready');
  });

  it('suspends an app whose idle deadline passed while the server was down', async () => {
    stage(w, 'web', 1, { ttl: '1s' });
    await w.registry.deploy('web', 1);
    await w.registry.stop();
    vi.setSystemTime(Date.now() + 5_000);
    w.runtime.restart();
    await w.restart();
    expect(row()).toMatchObject({ phase: 'Suspended', reason: 'Idle' });
    expect(w.runtime.live()).toEqual([]);
  });

  it('deploys a version that was acknowledged but never started before the server died', async () => {
    stage(w, 'web', 1); // the row and version are stored; the registry never heard of them
    await w.registry.start();
    await flush();
    expect(row()).toMatchObject({ phase: 'Ready', currentVersion: 1 });
  });

  it('resumes from the stored phase, with a warning, when the snapshot is unreadable', async () => {
    stage(w, 'web', 1, { phase: 'Suspended', snapshot: '{not json' });
    await w.registry.start();
    expect(row()?.phase).toBe('Suspended');
    expect(w.runtime.sandboxes).toHaveLength(0);
    expect(w.logs).toEqual([expect.objectContaining({ level: 'warn', extra: { app: 'web' } })]);
    expect(await w.registry.resume('web')).toMatchObject({ phase: 'Ready', currentVersion: 1 });
  });
});
