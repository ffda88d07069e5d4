/** The registry's log rings: they outlive sandboxes and carry followers until the app goes. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { LogLine } from '../../src/runtime/runtime.js';
import type { FakeSandbox } from './fake-runtime.js';
import { flush, stage, useFakeClock, world, type World } from './harness.js';

let w: World;
beforeEach(() => {
  useFakeClock();
  w = world();
});
afterEach(async () => {
  await w.registry.stop();
  vi.useRealTimers();
});

const serving = () => w.registry.serving('web') as FakeSandbox;

describe('app logs', () => {
  it('keeps a Suspended app’s last lines after its sandbox is reaped', async () => {
    stage(w, 'web', 1);
    await w.registry.deploy('web', 1);
    serving().print('last words');
    await w.registry.suspend('web');
    await flush();
    expect(w.runtime.live('web')).toEqual([]);
    expect(w.registry.logs('web').map((l) => l.text)).toContain('last words');
  });

  it('streams new lines to followers and tells them when the app is deleted', async () => {
    stage(w, 'web', 1);
    await w.registry.deploy('web', 1);
    serving().print('before');
    const seen: LogLine[] = [];
    const ends: unknown[] = [];
    w.registry.followLogs('web', { line: (l) => seen.push(l), end: (r) => ends.push(r) });
    serving().print('after');
    expect(seen.map((l) => l.text)).toEqual(['after']);
    await w.registry.delete('web');
    expect(ends).toEqual([{ code: 'not_found', message: 'the app was deleted' }]);
    expect(w.registry.logs('web')).toEqual([]);
  });

  it('stops sending to an unfollowed follower, and lets a throwing one go', async () => {
    stage(w, 'web', 1);
    await w.registry.deploy('web', 1);
    const seen: string[] = [];
    const unfollow = w.registry.followLogs('web', {
      line: (l) => seen.push(l.text),
      end: () => undefined,
    });
    let calls = 0;
    w.registry.followLogs('web', {
      line: () => {
        calls += 1;
        throw new Error('socket gone');
      },
      end: () => undefined,
    });
    serving().print('one');
    unfollow();
    serving().print('two');
    expect(seen).toEqual(['one']);
    expect(calls).toBe(1);
    expect(w.logs.filter((l) => l.msg === 'log follower failed')).toHaveLength(1);
    // The app never noticed.
    const own = w.registry.logs('web').filter((l) => l.stream !== 'system');
    expect(own.map((l) => [l.version, l.text])).toEqual([
      [1, 'one'],
      [1, 'two'],
    ]);
  });
});
