/**
 * The system under test for the model walk: the real AppRegistry and supervisor on a memory store,
 * with the fake runtime in manual mode, so each model event is produced the way production would
 * produce it (a runtime answer, a timer, a router request, a server restart), never sent directly.
 */
import { expect, vi } from 'vitest';
import { RuntimeError } from '../../src/runtime/runtime.js';
import type { FakeSandbox } from '../actors/fake-runtime.js';
import { flush, stage, world, type World } from '../actors/harness.js';
import {
  APP,
  EXIT,
  POLICY,
  PROBE_MS,
  WINDOW_MS,
  abstract,
  facts,
  stateOf,
  type ModelSnapshot,
} from './app-model.js';

const TEMPLATES = ['static', 'node', 'python'];

/**
 * Runs the promise chains a step started (runtime answers, reaps) but not the next turn, where
 * the supervisor's configuration check would move a Pending app on: that is the PREPARED step.
 */
async function settle(): Promise<void> {
  for (let i = 0; i < 50; i++) await Promise.resolve();
}

export class AppSut {
  readonly w: World = world({ policy: POLICY });
  private version = 1;
  private reaps = 0;
  private notices = 0;
  private lines = 0;

  async begin(): Promise<void> {
    this.w.runtime.manual = true;
    stage(this.w, APP, 1, { ttl: '1s' });
    await this.w.registry.deploy(APP, 1, { waitMs: 0 });
  }

  /** Makes the real system produce the event the label stands for. */
  async produce(label: string): Promise<void> {
    const { registry, runtime } = this.w;
    switch (label) {
      case 'DEPLOY':
        stage(this.w, APP, ++this.version, { ttl: '1s' });
        await registry.deploy(APP, this.version, { waitMs: 0 });
        break;
      case 'PREPARED':
        await flush(); // the supervisor's own check answers on the next turn
        break;
      case 'PREPARE_FAILED':
        runtime.templates = ['static'];
        await flush();
        runtime.templates = [...TEMPLATES];
        break;
      case 'CLAIMED:current':
        runtime.settleClaim('newest', 'ok');
        break;
      case 'CLAIMED:stale':
        runtime.settleClaim('oldest', 'ok');
        break;
      case 'CLAIM_FAILED:transient':
      case 'CLAIM_FAILED:fatal':
        runtime.settleClaim('newest', new RuntimeError('busy', label.endsWith('transient')));
        break;
      case 'CLAIM_FAILED:stale':
        runtime.settleClaim('oldest', new RuntimeError('busy', true));
        break;
      case 'STABLE':
        // Health probes come first; all pass, and the window's end follows.
        await vi.advanceTimersByTimeAsync(WINDOW_MS);
        break;
      case 'UNHEALTHY':
        runtime.failingHealth.add(registry.serving(APP) as FakeSandbox);
        await vi.advanceTimersByTimeAsync(3 * PROBE_MS);
        break;
      case 'RETRY':
      case 'IDLE_TIMEOUT:elapsed':
        await vi.advanceTimersToNextTimerAsync();
        break;
      case 'IDLE_TIMEOUT:touched':
        await vi.advanceTimersByTimeAsync(1);
        registry.touch(APP);
        await vi.advanceTimersToNextTimerAsync();
        break;
      case 'HEALTHY':
        runtime.settleInject('ok');
        break;
      case 'START_FAILED':
        runtime.settleInject(new RuntimeError('bad', false));
        break;
      case 'APP_EXITED:starting':
        runtime.settleInject(EXIT);
        break;
      case 'APP_EXITED:serving':
        (registry.serving(APP) as FakeSandbox).exit(EXIT.code, EXIT.lastLines);
        break;
      case 'APP_EXITED:previous': {
        // Ready in a window: the app's sandboxes are the serving one and the previous one.
        const serving = registry.serving(APP);
        const previous = runtime.live(APP).find((s) => s !== serving);
        if (!previous) throw new Error('no previous sandbox runs');
        previous.exit(EXIT.code, EXIT.lastLines);
        break;
      }
      case 'SUSPEND':
        await registry.suspend(APP);
        break;
      case 'CANCEL':
        expect(registry.cancel(APP)).toBeDefined();
        break;
      case 'WAKE':
        expect(await registry.route(APP, { waitMs: 0 })).toBeUndefined();
        break;
      case 'RESUME':
        await registry.resume(APP, { waitMs: 0 });
        break;
      case 'RESTORE':
      case 'RESTORE:fresh':
        await this.w.restart();
        this.lines = 0; // a new server's log rings start empty
        break;
      case 'RESTORE:elapsed':
      case 'RESTORE:adopt-elapsed':
        await registry.stop();
        vi.setSystemTime(Date.now() + 2_000); // the server was down past the idle deadline
        await this.w.restart({ keep: label === 'RESTORE:adopt-elapsed' });
        this.lines = 0;
        break;
      case 'RESTORE:adopt':
        await this.w.restart({ keep: true });
        this.lines = 0;
        break;
      case 'DELETE':
        await registry.delete(APP);
        break;
      default:
        throw new Error(`no way to produce ${label}`);
    }
    await settle();
  }

  /** Asserts the real system shows what the model says, and asked for the same effects. */
  check(
    model: ModelSnapshot,
    effects: { reaps: number; notices: string[]; notes: string[] },
  ): void {
    const { store, runtime, registry, events } = this.w;
    const state = stateOf(model);
    const row = store.getApp(APP);
    const lines = registry.logs(APP).slice(this.lines);
    this.lines += lines.length;
    expect(lines.map((l) => l.text)).toEqual(effects.notes);
    const newNotices = events.filter((e) => e.kind !== 'phase').slice(this.notices);
    this.notices += newNotices.length;
    expect(newNotices.map((e) => `${e.kind}:${e.initiator}`)).toEqual(effects.notices);
    expect(runtime.reapCalls - this.reaps).toBe(effects.reaps);
    this.reaps = runtime.reapCalls;
    // Claims the runtime still owes: the same ones in the model and in the real system.
    expect(runtime.claims).toHaveLength(model.context.claimsOwed.length);
    if (state === 'Deleted') {
      expect(row).toBeUndefined();
      expect(runtime.live(APP)).toEqual([]);
      expect(vi.getTimerCount()).toBe(0);
      return;
    }
    expect(row?.phase).toBe(state);
    const persisted = JSON.parse(row?.snapshot ?? '{}') as {
      state: string;
      context: ModelSnapshot['context'];
    };
    expect(abstract(persisted.state, persisted.context)).toBe(abstract(model.value, model.context));
    expect(facts(persisted.context)).toEqual(facts(model.context));
    expect(row).toMatchObject({
      reason: model.context.reason,
      message: model.context.message,
      currentVersion: model.context.version,
    });
    expect(row?.liveVersion ?? null).toBe(model.context.live);
    expect(row?.lastDeploy ?? null).toEqual(model.context.lastDeploy);
    const last = model.context.lastDeploy;
    if (last && last.outcome !== 'Pending') {
      expect(store.getVersion(APP, last.version)).toMatchObject(last);
    }
    const serving = registry.serving(APP) as FakeSandbox | undefined;
    expect(serving !== undefined).toBe(model.context.serving !== null);
    if (serving) expect(serving.live).toBe(true);
    const { serving: routed, sandbox, previous } = model.context;
    const held = [routed, sandbox, previous?.sandboxId ?? null].filter((id) => id !== null).length;
    expect(runtime.live(APP)).toHaveLength(held);
    const timers =
      (state === 'Ready' && model.context.idleAt !== null ? 1 : 0) +
      (model.context.retryAt !== null ? 1 : 0) +
      // A window's end, and the health probe that runs while it is open.
      (model.context.stableAt !== null ? 2 : 0);
    expect(vi.getTimerCount()).toBe(timers);
  }

  /** Late claims of superseded attempts land after the walk: each is reaped, none is served. */
  async drain(model: ModelSnapshot): Promise<void> {
    const { runtime } = this.w;
    const c = model.context;
    const strays =
      stateOf(model) === 'Claiming' ? c.claimsOwed.filter((a) => a !== c.attempt) : c.claimsOwed;
    const live = runtime.live(APP).length;
    for (let i = 0; i < strays.length; i++) runtime.settleClaim('oldest', 'ok');
    await flush();
    expect(runtime.live(APP)).toHaveLength(live);
    await this.w.registry.stop();
    expect(this.w.logs.filter((l) => l.level === 'error')).toEqual([]);
  }
}
