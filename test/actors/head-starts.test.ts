/**
 * A deploy's sandbox started ahead of its machine (src/actors/head-starts.ts): the machine takes
 * it only for the very start it plans, hears what it printed as a start of its own, and nothing
 * begun ahead outlives the deploy that began it.
 */
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { RuntimeError } from '../../src/runtime/runtime.js';
import { flush, stage, worldPerTest, type World } from './harness.js';

const current = worldPerTest();
let w: World;
beforeEach(() => {
  w = current();
});

/** A source the store has already. */
const STORED = { source: Buffer.from('source'), stored: Promise.resolve() };

/** The rows a deploy of `n` is about to write, as the deploy hands them over. */
function rowsOf(id: string, n: number) {
  const app = w.store.getApp(id);
  const version = w.store.getVersion(id, n);
  if (!app || !version) throw new Error(`${id} v${n} is not staged`);
  return { app, version };
}

/** Stages `web` v1 and begins its head start; its claim answered, its inject under way. */
async function headStarted() {
  stage(w, 'web', 1);
  w.runtime.manual = true;
  w.registry.headStart(rowsOf('web', 1), STORED);
  const ahead = w.runtime.settleClaim('newest', 'ok');
  if (!ahead) throw new Error('no sandbox claimed');
  await flush();
  expect(w.runtime.injects.map((i) => i.sandbox)).toEqual([ahead]);
  return ahead;
}

describe('head starts', () => {
  it("are taken by the deploy's machine: one claim, one inject, and that sandbox serves", async () => {
    const ahead = await headStarted();
    const done = w.registry.deploy('web', 1);
    await flush();
    expect(w.runtime.claims).toEqual([]);
    w.runtime.settleInject('ok');
    expect(await done).toMatchObject({ phase: 'Ready', currentVersion: 1 });
    expect(w.registry.serving('web')?.id).toBe(ahead.id);
    expect(w.runtime.injected).toHaveLength(1);
    expect(w.runtime.sandboxes).toEqual([ahead]);
  });

  it("hold what the app printed until the machine's inject, then log it as the version's", async () => {
    const ahead = await headStarted();
    ahead.print('loading');
    w.runtime.settleInject('ok');
    ahead.print('listening on 8080');
    await flush();
    expect(w.registry.logs('web')).toEqual([]);
    expect(await w.registry.deploy('web', 1)).toMatchObject({ phase: 'Ready' });
    const lines = w.registry.logs('web').map((l) => [l.text, l.version]);
    expect(lines).toEqual([
      ['[slipway] version 1 starting', 1],
      ['loading', 1],
      ['listening on 8080', 1],
      ['[slipway] serving version 1', 1],
    ]);
    ahead.print('a request');
    expect(w.registry.logs('web').at(-1)).toMatchObject({ text: 'a request', version: 1 });
  });

  it('fail the deploy as a start of its own would when the app exits before it answers', async () => {
    await headStarted();
    w.runtime.settleInject({ code: 3, signal: null, lastLines: ['Error: no PORT'] });
    await flush();
    const app = await w.registry.deploy('web', 1);
    expect(app).toMatchObject({ phase: 'Failed', reason: 'AppExited' });
    expect(app.message).toBe(
      'version 1 exited with code 3 before it answered; last lines:\nError: no PORT',
    );
    expect(w.runtime.claims).toEqual([]);
    expect(w.runtime.live('web')).toEqual([]);
  });

  it('hear an exit that came before the take only after the answer, as a crash when Ready', async () => {
    const ahead = await headStarted();
    w.runtime.settleInject('ok');
    ahead.exit(1, ['boom']);
    await w.registry.deploy('web', 1);
    await flush();
    // The version served first; then the app's crash was heard, as a crash of a Ready app.
    expect(w.store.getVersion('web', 1)).toMatchObject({ outcome: 'Ready' });
    expect(w.registry.logs('web').map((l) => l.text)).toEqual([
      '[slipway] version 1 starting',
      '[slipway] serving version 1',
      '[slipway] version 1 exited with code 1, restarting',
    ]);
  });

  it('are reaped when the machine plans another start; it claims its own', async () => {
    stage(w, 'web', 1);
    w.runtime.manual = true;
    const rows = rowsOf('web', 1);
    w.registry.headStart(
      { ...rows, app: { ...rows.app, env: [{ name: 'GREETING', value: 'x' }] } },
      STORED,
    );
    const ahead = w.runtime.settleClaim('newest', 'ok');
    await flush();
    const done = w.registry.deploy('web', 1);
    await flush();
    expect(ahead?.reaped).toBe(true);
    const own = w.runtime.settleClaim('newest', 'ok');
    await flush();
    w.runtime.settleInject('ok');
    expect(await done).toMatchObject({ phase: 'Ready' });
    expect(w.registry.serving('web')?.id).toBe(own?.id);
    expect(w.runtime.injected.map((spec) => spec.env)).toEqual([
      [{ name: 'GREETING', value: 'x' }],
      [{ name: 'GREETING', value: 'hi' }],
    ]);
  });

  it("wait for their own version's machine while an older deploy's claims", async () => {
    stage(w, 'web', 1);
    w.runtime.manual = true;
    const older = w.registry.deploy('web', 1);
    stage(w, 'web', 2);
    w.registry.headStart(rowsOf('web', 2), STORED);
    const ahead = w.runtime.settleClaim('newest', 'ok');
    await flush();
    expect(w.runtime.claims).toHaveLength(1);
    w.runtime.settleClaim('newest', 'ok');
    await flush();
    expect(ahead?.reaped).toBe(false);
    const newer = w.registry.deploy('web', 2);
    await flush();
    expect(w.runtime.claims).toEqual([]);
    for (const pending of [...w.runtime.injects].reverse()) {
      if (pending.sandbox === ahead) pending.resolve();
    }
    expect(await newer).toMatchObject({ phase: 'Ready', currentVersion: 2 });
    expect(w.registry.serving('web')?.id).toBe(ahead?.id);
    await older;
  });

  it('leave the machine to claim its own when their claim failed', async () => {
    stage(w, 'web', 1);
    w.runtime.manual = true;
    w.registry.headStart(rowsOf('web', 1), STORED);
    w.runtime.settleClaim('newest', new RuntimeError('the pool is empty', true));
    const done = w.registry.deploy('web', 1);
    await flush();
    const own = w.runtime.settleClaim('newest', 'ok');
    await flush();
    w.runtime.settleInject('ok');
    expect(await done).toMatchObject({ phase: 'Ready' });
    expect(w.registry.serving('web')?.id).toBe(own?.id);
  });

  it("are reaped when their deploy ends without taking them, and only their own version's", async () => {
    const ahead = await headStarted();
    w.registry.dropHeadStart('web', 2);
    await flush();
    expect(ahead.reaped).toBe(false);
    w.registry.dropHeadStart('web', 1);
    await flush();
    expect(ahead.reaped).toBe(true);
    expect(w.runtime.injects).toEqual([]);
  });

  it('are replaced by a newer deploy of the app, and reaped when nobody takes them in 30 s', async () => {
    const first = await headStarted();
    stage(w, 'web', 2);
    w.registry.headStart(rowsOf('web', 2), STORED);
    const second = w.runtime.settleClaim('newest', 'ok');
    await flush();
    expect(first.reaped).toBe(true);
    expect(second?.reaped).toBe(false);
    await vi.advanceTimersByTimeAsync(29_000);
    expect(second?.reaped).toBe(false);
    await vi.advanceTimersByTimeAsync(1_000);
    await flush();
    expect(second?.reaped).toBe(true);
  });

  it('are reaped when the app is deleted or the server stops', async () => {
    const ahead = await headStarted();
    await w.registry.delete('web');
    await flush();
    expect(ahead.reaped).toBe(true);
    stage(w, 'api', 1);
    w.registry.headStart(rowsOf('api', 1), STORED);
    const other = w.runtime.settleClaim('newest', 'ok');
    await flush();
    await w.registry.stop();
    await flush();
    expect(other?.reaped).toBe(true);
  });
});
