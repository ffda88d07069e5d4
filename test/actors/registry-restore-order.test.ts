/**
 * The apps a restart must start again come back a few at a time, most recently used first, and a
 * request for one still waiting moves it to the front (issue 23, item 4). The fake runtime is in
 * manual mode after the restart, so the test sees every claim the registry makes, in order.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { flush, stage, useFakeClock, world, type World } from './harness.js';

const LIMIT = 2;
const IDS = ['a', 'b', 'c', 'd', 'e', 'f'];
/** Visited in this order before the restart: `d` last, so most recently. */
const VISITS = ['c', 'a', 'f', 'b', 'e', 'd'];

let w: World;
beforeEach(() => {
  useFakeClock();
  w = world({ restoreConcurrency: LIMIT });
});
afterEach(async () => {
  await w.registry.stop();
  expect(w.logs.filter((l) => l.level === 'error')).toEqual([]);
  vi.useRealTimers();
});

/** Deploys every app and visits them in VISITS order, a second apart. */
async function deployAndVisit(): Promise<void> {
  for (const id of IDS) {
    stage(w, id, 1);
    await w.registry.deploy(id, 1);
  }
  for (const id of VISITS) {
    vi.setSystemTime(Date.now() + 1_000);
    w.registry.touch(id);
  }
}

/** Starts under way now: claims the runtime owes plus sandboxes it is still starting. */
const inFlight = (): number => w.runtime.claims.length + w.runtime.injects.length;

/**
 * Lets every queued start through, one finished at a time; returns the apps in the order their
 * claims reached the runtime, and the most starts ever under way at once.
 */
async function drain(): Promise<{ order: string[]; most: number }> {
  const order: string[] = [];
  let most = 0;
  const seen = new Set<object>();
  const note = (): void => {
    for (const claim of w.runtime.claims) {
      if (!seen.has(claim)) order.push(claim.appId);
      seen.add(claim);
    }
    most = Math.max(most, inFlight());
  };
  await flush();
  note();
  while (w.runtime.claims.length > 0) {
    w.runtime.settleClaim('oldest', 'ok');
    await flush();
    note();
    w.runtime.settleInject('ok');
    await flush();
    note();
  }
  return { order, most };
}

describe('apps a restart starts again', () => {
  it('come back most recently used first, never more than the limit at once', async () => {
    await deployAndVisit();
    w.runtime.manual = true;
    await w.restart(); // nothing kept: every app needs a cold start
    await flush();
    expect(w.runtime.claims.map((c) => c.appId)).toEqual(['d', 'e']);
    const { order, most } = await drain();
    expect(order).toEqual([...VISITS].reverse());
    expect(most).toBe(LIMIT);
    for (const id of IDS) expect(w.store.getApp(id)?.phase).toBe('Ready');
  });

  it('a request for an app still waiting moves it to the front, and is answered', async () => {
    await deployAndVisit();
    w.runtime.manual = true;
    await w.restart();
    await flush();
    // `c` was visited longest ago: without the request it would come last.
    const routed = w.registry.route('c', { waitMs: 60_000 });
    const { order, most } = await drain();
    expect(order).toEqual(['d', 'e', 'c', 'b', 'f', 'a']);
    expect(most).toBe(LIMIT);
    const sandbox = await routed;
    expect(sandbox?.id).toBe(w.runtime.live('c')[0]?.id);
  });

  it('an owner’s deploy does not wait in line, and the queued start it replaced never claims', async () => {
    await deployAndVisit();
    w.runtime.manual = true;
    await w.restart();
    await flush();
    stage(w, 'a', 2);
    const deployed = w.registry.deploy('a', 2, { waitMs: 60_000 });
    await flush();
    expect(w.runtime.claims.map((c) => c.appId)).toEqual(['d', 'e', 'a']);
    w.runtime.settleClaim('newest', 'ok');
    await flush();
    w.runtime.settleInject('ok');
    expect(await deployed).toMatchObject({ phase: 'Ready', currentVersion: 2 });
    const { order } = await drain();
    expect(order).toEqual(['d', 'e', 'b', 'f', 'c']);
    expect(w.runtime.live('a')).toHaveLength(1);
  });

  it('adopted apps serve at once, whatever waits at the gate', async () => {
    await w.registry.stop();
    w = world({ restoreConcurrency: 1 });
    await deployAndVisit();
    // `b` and `c` died with the last process; the others outlive it.
    for (const id of ['b', 'c']) for (const s of w.runtime.live(id)) s.reaped = true;
    w.runtime.manual = true;
    await w.restart({ keep: true });
    await flush();
    for (const id of ['a', 'd', 'e', 'f']) {
      expect(await w.registry.route(id, { waitMs: 0 }), id).toBeDefined();
    }
    expect(w.runtime.claims.map((c) => c.appId)).toEqual(['b']);
    const { order, most } = await drain();
    expect(order).toEqual(['b', 'c']);
    expect(most).toBe(1);
  });

  it('keep their order by last use across the restart, without the deleted apps', async () => {
    await deployAndVisit();
    await w.registry.delete('f');
    w.runtime.manual = true;
    await w.restart();
    const { order } = await drain();
    expect(order).toEqual(['d', 'e', 'b', 'a', 'c']);
    expect(JSON.parse(w.store.getMeta('app_last_use') ?? '{}')).not.toHaveProperty('f');
  });
});
