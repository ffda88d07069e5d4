/** Shared set-up for the actor and model tests: a memory store, the fake runtime, a registry. */
import { Readable } from 'node:stream';
import { afterEach, beforeEach, expect, vi } from 'vitest';
import { AppRegistry, type AppEvent } from '../../src/actors/registry.js';
import type { AppPolicy } from '../../src/machines/app-machine.js';
import { createMemoryStore } from '../../src/persistence/memory-store.js';
import type { AppRecord, Store } from '../../src/persistence/store.js';
import type { SourceStore, StoredBlob } from '../../src/sources/source-store.js';
import { FakeRuntime } from './fake-runtime.js';

/** Short budgets so retries and restarts take milliseconds of (fake) time. */
export const TEST_POLICY: AppPolicy = {
  claimRetryBaseMs: 10,
  claimRetryMaxMs: 40,
  maxClaimRetries: 2,
  restartBaseMs: 10,
  restartMaxMs: 40,
  crashLimit: 3,
  crashWindowMs: 60 * 60_000,
  // Retired at the switch, as before stability windows: the model walk and its own tests open one.
  stabilityWindowMs: 0,
  healthProbeMs: 10,
};

/** Timers and the clock are fake; setImmediate stays real so `flush` can let the actors run. */
export function useFakeClock(): void {
  vi.useFakeTimers({
    toFake: ['setTimeout', 'clearTimeout', 'Date'],
    now: new Date('2025-01-01T00:00:00Z'),
  });
}

/**
 * A fresh world for each test of the file, on the fake clock; after each, its registry stops and
 * must have logged no error.
 */
export function worldPerTest(opts: WorldOptions = {}): () => World {
  let current: World | undefined;
  beforeEach(() => {
    useFakeClock();
    current = world(opts);
  });
  afterEach(async () => {
    await current?.registry.stop();
    expect(current?.logs.filter((l) => l.level === 'error')).toEqual([]);
    vi.useRealTimers();
  });
  return () => {
    if (!current) throw new Error('the world is made before each test');
    return current;
  };
}

/** Lets every queued turn run: effects, runtime answers, their events, the reaps they cause. */
export async function flush(turns = 4): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

export class MemorySourceStore implements SourceStore {
  readonly backend = 'served';
  readonly blobs = new Map<string, Buffer>();
  async put(key: string, data: Buffer): Promise<void> {
    this.blobs.set(key, data);
  }
  async open(key: string): Promise<Readable | undefined> {
    const blob = this.blobs.get(key);
    return blob ? Readable.from([blob]) : undefined;
  }
  async size(key: string): Promise<number | undefined> {
    return this.blobs.get(key)?.length;
  }
  async readWhole(key: string, max: number): Promise<Buffer | undefined> {
    const blob = this.blobs.get(key);
    return blob && blob.length <= max ? blob : undefined;
  }
  async remove(key: string): Promise<void> {
    this.blobs.delete(key);
  }
  ping(): boolean {
    return true;
  }
  probe(): void {}
  async list(): Promise<StoredBlob[]> {
    return [...this.blobs].map(([key, blob]) => ({ key, modifiedAt: 0, bytes: blob.length }));
  }
}

export interface World {
  store: Store;
  runtime: FakeRuntime;
  sources: MemorySourceStore;
  events: AppEvent[];
  /** Everything the registry logged; tests expect no `error` entries. */
  logs: Array<{ level: string; msg: string; extra?: object }>;
  registry: AppRegistry;
  /**
   * A new registry on the same store and runtime, as after a server restart; with `keep`, the
   * sandboxes running apps outlive the old one and the new one adopts them (restart continuity).
   */
  restart(opts?: { keep?: boolean }): Promise<AppRegistry>;
}

export interface WorldOptions {
  policy?: Partial<AppPolicy>;
  deployWaitMs?: number;
  /** Wraps the store the registry sees (to make writes fail); tests stage rows on the plain one. */
  wrapStore?: (store: Store) => Store;
  /** Keep retired sandboxes warm (off by default, as in the model walk). */
  keepRetired?: { keepMs: number; max: number };
  /** Cold starts a restart may have under way at once (the registry's default otherwise). */
  restoreConcurrency?: number;
}

export function world(opts: WorldOptions = {}): World {
  const store = createMemoryStore();
  const registryStore = opts.wrapStore?.(store) ?? store;
  const runtime = new FakeRuntime();
  const sources = new MemorySourceStore();
  const events: AppEvent[] = [];
  const logs: World['logs'] = [];
  const make = (): AppRegistry => {
    const registry = new AppRegistry({
      store: registryStore,
      runtime,
      sourceStore: sources,
      appUrl: (name) => `http://${name}.localhost:8080`,
      policy: { ...TEST_POLICY, ...opts.policy },
      deployWaitMs: opts.deployWaitMs ?? 5_000,
      // Retry times exact, as the model computes them.
      jitter: () => undefined,
      keepRetired: opts.keepRetired,
      restoreConcurrency: opts.restoreConcurrency,
      log: (level, msg, extra) => void logs.push({ level, msg, extra }),
    });
    registry.on((e) => events.push(e));
    return registry;
  };
  const w: World = {
    store,
    runtime,
    sources,
    events,
    logs,
    registry: make(),
    async restart(opts = {}) {
      await w.registry.stop();
      runtime.restart(opts.keep);
      w.registry = make();
      await w.registry.start();
      return w.registry;
    },
  };
  return w;
}

/** Stores an app row and version `n` the way the deploy service does before calling deploy. */
export function stage(w: World, id: string, n: number, extra: Partial<AppRecord> = {}): void {
  const now = new Date().toISOString();
  const existing = w.store.getApp(id);
  w.store.putApp({
    id,
    name: id,
    ownerId: 'alice',
    phase: 'Pending',
    reason: 'Queued',
    message: `version ${n} queued`,
    lane: 'fast',
    template: 'node',
    env: [{ name: 'GREETING', value: 'hi' }],
    allowedHosts: ['*.example.com'],
    ttl: '30m',
    currentVersion: existing?.currentVersion ?? 0,
    createdAt: existing?.createdAt ?? now,
    lastDeployedAt: now,
    snapshot: existing?.snapshot,
    ...extra,
  });
  const sourceKey = `${id}.v${n}.${'0'.repeat(31)}${n % 10}`;
  w.store.addVersion({
    appId: id,
    version: n,
    timestamp: now,
    template: extra.template ?? 'node',
    lane: 'fast',
    sourceHash: `sha256:${n}`,
    sourceKey,
  });
  w.sources.blobs.set(sourceKey, Buffer.from(`source ${n}`));
}
