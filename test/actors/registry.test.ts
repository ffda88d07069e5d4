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
const retryAt = (id = 'web'): number | null =>
  JSON.parse(row(id)?.snapshot ?? '{}').context.retryAt;

describe('deploy', () => {
  it('goes Pending → Claiming → Starting → Ready and injects what the store rows say', async () => {
    stage(w, 'web', 1);
    const app = await w.registry.deploy('web', 1);
    expect(app).toMatchObject({
      phase: 'Ready',
      reason: 'Running',
      message: 'serving version 1',
      currentVersion: 1,
    });
    expect(app.url).toBe('http://web.localhost:8080');
    expect(w.runtime.injected).toEqual([
      expect.objectContaining({
        appId: 'web',
        version: 1,
        sourceKey: w.store.getVersion('web', 1)?.sourceKey,
        template: 'node',
        env: [{ name: 'GREETING', value: 'hi' }],
        allowedHosts: ['*.example.com'],
      }),
    ]);
    const phases = w.events.filter((e) => e.kind === 'phase').map((e) => e.phase);
    expect(phases).toEqual(['Pending', 'Claiming', 'Starting', 'Ready']);
    expect(w.events.find((e) => e.kind === 'phase')?.initiator).toBe('user');
    expect(w.events.find((e) => e.kind === 'deploy')).toMatchObject({
      app_id: 'web',
      owner: 'alice',
      initiator: 'user',
      version: 1,
    });
    expect(w.registry.serving('web')?.id).toBe(w.runtime.live('web')[0]?.id);
  });

  it('has many callers wait on deploys at once without a listener-leak warning', async () => {
    // Each waiting caller listens on the registry's one shutdown signal; 11 is node's warning line.
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const ids = Array.from({ length: 12 }, (_, i) => `app-${i}`);
      ids.forEach((id) => stage(w, id, 1));
      const apps = await Promise.all(ids.map((id) => w.registry.deploy(id, 1)));
      expect(apps.map((a) => a.phase)).toEqual(ids.map(() => 'Ready'));
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.map((warning) => warning.name)).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('retries a transient claim failure with capped exponential backoff, then succeeds', async () => {
    stage(w, 'web', 1);
    w.runtime.claimScript.push(
      new RuntimeError('pool empty', true),
      new RuntimeError('pool empty', true),
    );
    const done = w.registry.deploy('web', 1);
    await flush();
    expect(row()).toMatchObject({
      phase: 'Claiming',
      reason: 'ClaimRetrying',
      message: 'claim failed: pool empty; retry 1 of 2 in 10ms',
    });
    expect(retryAt()).toBe(Date.now() + 10); // an absolute deadline, so it survives a restart
    await vi.advanceTimersByTimeAsync(10);
    await flush();
    expect(row()?.message).toBe('claim failed: pool empty; retry 2 of 2 in 20ms');
    await vi.advanceTimersByTimeAsync(19);
    expect(row()?.phase).toBe('Claiming');
    await vi.advanceTimersByTimeAsync(1);
    expect(await done).toMatchObject({ phase: 'Ready' });
    expect(w.runtime.sandboxes).toHaveLength(1);
  });

  it('brings the live release back after a restart however often the platform fails it', async () => {
    stage(w, 'web', 1);
    expect(await w.registry.deploy('web', 1)).toMatchObject({ phase: 'Ready' });
    // Three times the budget: a loaded host that cannot boot a sandbox for a while.
    for (let i = 0; i < 6; i++)
      w.runtime.claimScript.push(new RuntimeError('agent not ready', true));
    await w.restart();
    await flush();
    for (let i = 0; i < 6; i++) {
      expect(row()).toMatchObject({ phase: 'Claiming', reason: 'ClaimRetrying' });
      if (i >= 2) expect(row()?.message).toContain('until the serving version is back');
      await vi.advanceTimersToNextTimerAsync();
      await flush();
    }
    expect(row()).toMatchObject({ phase: 'Ready', liveVersion: 1 });
    expect(w.runtime.live('web')).toHaveLength(1);
  });

  it('fails with ClaimFailed once the retry budget is spent', async () => {
    stage(w, 'web', 1);
    for (let i = 0; i < 3; i++) w.runtime.claimScript.push(new RuntimeError('pool empty', true));
    const done = w.registry.deploy('web', 1);
    await flush();
    await vi.advanceTimersByTimeAsync(10);
    await flush();
    await vi.advanceTimersByTimeAsync(20);
    expect(await done).toMatchObject({
      phase: 'Failed',
      reason: 'ClaimFailed',
      message: 'could not claim a sandbox for version 1 after 2 retries: pool empty',
    });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('fails at once on a non-transient claim failure', async () => {
    stage(w, 'web', 1);
    w.runtime.claimScript.push(new RuntimeError('template broken', false));
    expect(await w.registry.deploy('web', 1)).toMatchObject({
      phase: 'Failed',
      reason: 'ClaimFailed',
      message: 'could not claim a sandbox for version 1: template broken',
    });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('fails before any sandbox exists when the runtime lacks the template', async () => {
    stage(w, 'web', 1, { template: 'go' });
    const app = await w.registry.deploy('web', 1);
    expect(app).toMatchObject({ phase: 'Failed', reason: 'UnknownTemplate' });
    expect(app.message).toContain(
      'template "go" is not available on the local runtime (available: static, node, python)',
    );
    expect(w.runtime.sandboxes).toHaveLength(0);
  });

  it('fails with AppExited, the exit code and the last lines when the app exits before it answers', async () => {
    stage(w, 'web', 1);
    w.runtime.injectScript.push({
      code: 3,
      signal: null,
      lastLines: ['Error: no PORT', '    at server.js:4'],
    });
    const app = await w.registry.deploy('web', 1);
    expect(app).toMatchObject({ phase: 'Failed', reason: 'AppExited' });
    expect(app.message).toBe(
      'version 1 exited with code 3 before it answered; last lines:\nError: no PORT\n    at server.js:4',
    );
    expect(w.runtime.live('web')).toEqual([]);
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    expect(row()?.phase).toBe('Failed'); // no restart loop
    expect(w.runtime.sandboxes).toHaveLength(1);
    expect(w.registry.logs('web').map((l) => l.text)).toEqual([
      '[slipway] version 1 starting',
      '[slipway] version 1 failed: AppExited: version 1 exited with code 3 before it answered',
    ]);
    expect(w.store.getVersion('web', 1)).toMatchObject({ outcome: 'Failed', reason: 'AppExited' });
  });

  it('fails with StartFailed when inject fails otherwise, and a redeploy fixes a Failed app', async () => {
    stage(w, 'web', 1);
    w.runtime.injectScript.push(new RuntimeError('source download failed', false));
    expect(await w.registry.deploy('web', 1)).toMatchObject({
      phase: 'Failed',
      reason: 'StartFailed',
      message: 'version 1 did not start: source download failed',
    });
    stage(w, 'web', 2);
    expect(await w.registry.deploy('web', 2)).toMatchObject({ phase: 'Ready', currentVersion: 2 });
  });

  it('starts the requested version for a stored row that has no actor yet', async () => {
    stage(w, 'web', 1);
    stage(w, 'web', 2);
    // The deploy service stored a configuration gap as Failed without asking the registry.
    w.store.putApp({ ...row()!, phase: 'Failed', reason: 'NoEntrypoint', currentVersion: 1 });
    expect(await w.registry.deploy('web', 2)).toMatchObject({ phase: 'Ready', currentVersion: 2 });
    expect(w.runtime.injected.map((spec) => spec.version)).toEqual([2]);
  });
});

describe('crashes while Ready', () => {
  it('restarts the same version after a backoff', async () => {
    stage(w, 'web', 1);
    await w.registry.deploy('web', 1);
    const first = w.runtime.live('web')[0];
    first?.exit(1, ['TypeError: x is undefined']);
    await flush();
    expect(row()).toMatchObject({
      phase: 'Starting',
      reason: 'Restarting',
      message: 'app exited with code 1; restart 1 of 2 in 10ms',
    });
    expect(w.registry.serving('web')).toBeUndefined();
    expect(first?.reaped).toBe(true);
    await vi.advanceTimersByTimeAsync(10);
    await flush();
    expect(row()).toMatchObject({ phase: 'Ready', currentVersion: 1 });
    expect(w.registry.serving('web')?.id).not.toBe(first?.id);
    expect(w.runtime.injected.map((s) => s.version)).toEqual([1, 1]);
  });

  it('fails with CrashLoop, the exit code and last lines after repeated crashes', async () => {
    stage(w, 'web', 1);
    await w.registry.deploy('web', 1);
    for (const backoff of [10, 20]) {
      w.runtime.live('web')[0]?.exit(1, ['boom']);
      await flush();
      await vi.advanceTimersByTimeAsync(backoff);
      await flush();
      expect(row()?.phase).toBe('Ready');
    }
    w.runtime.live('web')[0]?.exit(1, ['boom']);
    await flush();
    expect(row()).toMatchObject({
      phase: 'Failed',
      reason: 'CrashLoop',
      message: 'app exited with code 1, 3 crashes within 1h0m0s; last lines:\nboom',
    });
    expect(w.runtime.live('web')).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });
});
