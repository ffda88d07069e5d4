import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Store } from '../../src/persistence/store.js';
import { stage, useFakeClock, world, type World } from './harness.js';

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

describe('isolation', () => {
  it("keeps one app's runtime failure from touching another", async () => {
    stage(w, 'good', 1);
    stage(w, 'bad', 1);
    w.runtime.broken.add('bad');
    const [bad, good] = await Promise.all([
      w.registry.deploy('bad', 1),
      w.registry.deploy('good', 1),
    ]);
    expect(bad).toMatchObject({
      phase: 'Failed',
      reason: 'ClaimFailed',
      message: expect.stringContaining('runtime bug for bad'),
    });
    expect(good).toMatchObject({ phase: 'Ready' });
  });

  it('survives a throwing listener and a failing store write, and logs both', async () => {
    let failures = 1;
    w = world({
      wrapStore: (store) => ({
        ...bind(store),
        putApp: (app) => {
          if (app.id === 'bad' && failures-- > 0) throw new Error('disk full');
          store.putApp(app);
        },
      }),
    });
    w.registry.on(() => {
      throw new Error('listener bug');
    });
    stage(w, 'bad', 1);
    stage(w, 'good', 1);
    expect(await w.registry.deploy('good', 1)).toMatchObject({ phase: 'Ready' });
    expect(await w.registry.deploy('bad', 1)).toMatchObject({ phase: 'Ready' });
    expect(w.logs.map((l) => l.msg)).toEqual(
      expect.arrayContaining([
        'app event listener failed',
        'write failed; retrying until it lands',
      ]),
    );
    // The refused row write is not forgotten: it lands on its retry.
    await vi.waitFor(() => expect(w.store.getApp('bad')).toMatchObject({ phase: 'Ready' }));
    w.logs.length = 0; // the errors above were the point of this test
  });

  it('drops a deleted app’s waiting row write, so it never lands on a new app of that name', async () => {
    let refuse = true;
    w = world({
      wrapStore: (store) => ({
        ...bind(store),
        putApp: (app) => {
          if (refuse && app.id === 'x' && app.phase === 'Ready') throw new Error('disk full');
          store.putApp(app);
        },
      }),
    });
    stage(w, 'x', 1);
    expect(await w.registry.deploy('x', 1)).toMatchObject({ phase: 'Ready' });
    await w.registry.delete('x');
    refuse = false;
    stage(w, 'x', 1);
    // The old actor's Ready row would land on its first retry (100 ms); it must not.
    await vi.advanceTimersByTimeAsync(400);
    expect(w.store.getApp('x')).toMatchObject({ phase: 'Pending', reason: 'Queued' });
    w.logs.length = 0; // the refused write was the point of this test
  });
});

/** The store's methods as an object of bound functions, so one of them can be swapped. */
function bind(store: Store): Store {
  const out: Record<string, unknown> = { backend: store.backend };
  for (const key of Object.getOwnPropertyNames(store) as Array<keyof Store>) {
    const value = store[key];
    out[key] = typeof value === 'function' ? value.bind(store) : value;
  }
  return out as unknown as Store;
}

describe('logs', () => {
  it('keeps the last 1,000 lines per app across its sandboxes', async () => {
    stage(w, 'web', 1);
    await w.registry.deploy('web', 1);
    const sandbox = w.runtime.live('web')[0];
    for (let i = 0; i < 1_100; i++) sandbox?.print(`line ${i}`);
    const lines = w.registry.logs('web');
    expect(lines).toHaveLength(1_000);
    expect(lines[0]?.text).toBe('line 100');
    expect(lines.at(-1)?.text).toBe('line 1099');
    expect(w.registry.logs('other')).toEqual([]);
  });
});
