/**
 * Retired sandboxes kept warm for rollbacks: the real registry and supervisor with the fake
 * runtime and a fake clock. The model walk runs with keeping off; this file covers keeping.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { FakeSandbox } from './fake-runtime.js';
import { flush, stage, useFakeClock, world, type World } from './harness.js';

const KEEP_MS = 180_000;
let w: World;

beforeEach(() => {
  useFakeClock();
  w = world({ keepRetired: { keepMs: KEEP_MS, max: 2 } });
});
afterEach(async () => {
  await w.registry.stop();
  expect(w.logs.filter((l) => l.level === 'error')).toEqual([]);
  vi.useRealTimers();
});

/** A new version `n` restoring version `from`'s source, as a rollback stores it. */
function stageRollback(id: string, n: number, from: number): void {
  const source = w.store.getVersion(id, from);
  if (!source) throw new Error(`no version ${from}`);
  w.store.addVersion({
    ...source,
    version: n,
    timestamp: new Date().toISOString(),
    sourceKey: `${id}.v${n}.${'0'.repeat(31)}${n % 10}`,
    rolledBackFrom: from,
  });
}

const serving = (id = 'web') => w.registry.serving(id) as FakeSandbox | undefined;

async function deployed(id: string, n: number): Promise<FakeSandbox | undefined> {
  await w.registry.deploy(id, n);
  await flush();
  return serving(id);
}

/** Versions 1 and 2 of `web`, each deployed until Ready: what serves then, and what served before. */
async function twoVersions(): Promise<{ first?: FakeSandbox; second?: FakeSandbox }> {
  stage(w, 'web', 1);
  const first = await deployed('web', 1);
  stage(w, 'web', 2);
  return { first, second: await deployed('web', 2) };
}

/** Rolls back to version 1, which starts afresh: its kept sandbox `first` is reaped, not taken. */
async function rollsBackAfresh(first: FakeSandbox | undefined): Promise<void> {
  stageRollback('web', 3, 1);
  expect(await w.registry.deploy('web', 3)).toMatchObject({ phase: 'Ready' });
  expect(serving()).not.toBe(first);
  expect(first?.reaped).toBe(true);
}

describe('keeping the previous sandbox warm', () => {
  it('keeps the sandbox a redeploy swapped out, unrouted, and a rollback takes it back', async () => {
    const { first, second } = await twoVersions();
    expect(second).not.toBe(first);
    expect(first?.live).toBe(true);
    expect(w.registry.kept('web')).toEqual([first?.id]);

    const claimsBefore = w.runtime.sandboxes.length;
    const injectsBefore = w.runtime.injected.length;
    stageRollback('web', 3, 1);
    expect(await w.registry.deploy('web', 3)).toMatchObject({ phase: 'Ready', currentVersion: 3 });
    await flush();
    expect(serving()).toBe(first);
    // Taken back as it was: no new sandbox, no new inject.
    expect(w.runtime.sandboxes).toHaveLength(claimsBefore);
    expect(w.runtime.injected).toHaveLength(injectsBefore);
    // The one it replaced is kept in turn, so rolling forward again is as quick.
    expect(w.registry.kept('web')).toEqual([second?.id]);
  });

  it('starts afresh when the kept sandbox runs something else', async () => {
    const { first } = await twoVersions();
    // Same source as version 1, but the environment changed since: not what the kept one runs.
    stageRollback('web', 3, 1);
    w.store.putApp({
      ...(w.store.getApp('web') ?? fail()),
      env: [{ name: 'GREETING', value: 'x' }],
    });
    await w.registry.deploy('web', 3);
    await flush();
    expect(serving()).not.toBe(first);
    expect(w.runtime.injected.at(-1)).toMatchObject({ version: 3 });
    // One per app: the previous version's sandbox replaced version 1's, which was reaped.
    expect(first?.reaped).toBe(true);
  });

  it('reaps a kept sandbox after the keep time', async () => {
    const { first } = await twoVersions();
    await vi.advanceTimersByTimeAsync(KEEP_MS - 1);
    expect(first?.live).toBe(true);
    await vi.advanceTimersByTimeAsync(1);
    await flush();
    expect(first?.reaped).toBe(true);
    expect(w.registry.kept('web')).toEqual([]);
    expect(w.runtime.live('web')).toEqual([serving()]);
  });

  it('keeps at most `max` across apps, the oldest reaped first', async () => {
    const firsts: Array<FakeSandbox | undefined> = [];
    for (const id of ['a', 'b', 'c']) {
      stage(w, id, 1);
      firsts.push(await deployed(id, 1));
      stage(w, id, 2);
      await deployed(id, 2);
    }
    expect(firsts.map((s) => s?.reaped)).toEqual([true, false, false]);
    expect(['a', 'b', 'c'].map((id) => w.registry.kept(id).length)).toEqual([0, 1, 1]);
  });

  it('reaps what it keeps when the app is suspended or deleted', async () => {
    const { first } = await twoVersions();
    await w.registry.suspend('web');
    await flush();
    expect(first?.reaped).toBe(true);
    expect(w.runtime.live('web')).toEqual([]);

    stage(w, 'gone', 1);
    const old = await deployed('gone', 1);
    stage(w, 'gone', 2);
    await deployed('gone', 2);
    await w.registry.delete('gone');
    expect(old?.reaped).toBe(true);
    expect(w.runtime.live('gone')).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('leaves the serving version serving when a deploy fails, and keeps nothing extra', async () => {
    stage(w, 'web', 1);
    const first = await deployed('web', 1);
    stage(w, 'web', 2);
    w.runtime.injectScript.push({ code: 1, signal: null, lastLines: ['broken'] });
    expect(await w.registry.deploy('web', 2)).toMatchObject({
      phase: 'Ready',
      currentVersion: 1,
      liveVersion: 1,
      lastDeploy: { version: 2, outcome: 'Failed', reason: 'AppExited' },
    });
    await flush();
    expect(serving()).toBe(first);
    expect(first?.reaped).toBe(false);
    expect(w.registry.kept('web')).toEqual([]);
    expect(w.runtime.live('web')).toEqual([first]);
  });

  it('forgets a kept sandbox that dies, without calling it a crash or logging its lines', async () => {
    const { first } = await twoVersions();
    first?.print('still ticking');
    first?.exit(137);
    await flush();
    expect(w.registry.kept('web')).toEqual([]);
    expect(w.store.getApp('web')).toMatchObject({ phase: 'Ready', reason: 'Running' });
    const texts = w.registry.logs('web').map((l) => l.text);
    expect(texts).not.toContain('still ticking');
    expect(texts.join('\n')).not.toContain('app exited');
  });

  it('does not take back a kept sandbox that stopped answering', async () => {
    const { first } = await twoVersions();
    w.runtime.health = async () => false;
    await rollsBackAfresh(first);
  });

  it('checks the kept sandbox as the rollback begins, and its take waits for no other check', async () => {
    const { first, second } = await twoVersions();
    const checked: string[] = [];
    w.runtime.health = async (sandbox) => {
      checked.push(sandbox.id);
      return true;
    };
    w.registry.probeKept('web');
    // The serving sandbox is not what a rollback takes back: only the kept one is checked.
    expect(checked).toEqual([first?.id]);
    stageRollback('web', 3, 1);
    await w.registry.deploy('web', 3);
    await flush();
    expect(serving()).toBe(first);
    expect(checked).toEqual([first?.id]);
    expect(second?.live).toBe(true);
  });

  it('takes no kept sandbox whose check, begun ahead, found it not answering', async () => {
    const { first } = await twoVersions();
    w.runtime.health = async () => false;
    w.registry.probeKept('web');
    w.runtime.health = async () => true;
    await rollsBackAfresh(first);
  });

  it('checks again when the check begun ahead is over a second old', async () => {
    const { first } = await twoVersions();
    w.registry.probeKept('web'); // a rollback that never got to its take
    await vi.advanceTimersByTimeAsync(1_500);
    w.runtime.health = async () => false;
    await rollsBackAfresh(first);
  });

  it('reaps at once when keeping is off', async () => {
    await w.registry.stop();
    w = world();
    const { first } = await twoVersions();
    expect(first?.reaped).toBe(true);
    expect(w.registry.kept('web')).toEqual([]);
  });
});

function fail(): never {
  throw new Error('missing row');
}
