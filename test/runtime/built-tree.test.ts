import { pbkdf2 } from 'node:crypto';
import { promisify } from 'node:util';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { artifactKey, openArtifactStore } from '../../src/runtime/local/artifact-store.js';
import { readHostEnv } from '../../src/runtime/local/host-env.js';
import { readPackageHosts } from '../../src/runtime/local/package-hosts.js';
import type { LogLine } from '../../src/runtime/runtime.js';
import { mintSourceKey } from '../../src/sources/keys.js';
import { assertRegistryReachable, depApp, SERVER_BODY } from '../support/general-lane-apps.js';
import { tarGz } from '../support/tarball.js';
import { claimOnly, request, startRuntime, type TestRuntime } from './support.js';

/**
 * Issue 10 item 4: a general-lane release installs once. Its built tree is kept by (app, source
 * hash, toolchain), and the next start of the same release unpacks it instead of installing.
 */
const INSTALL = 120_000;
let t: TestRuntime;

beforeAll(async () => {
  await assertRegistryReachable();
  const env = readHostEnv();
  const packageHosts = await readPackageHosts(env.node, env.python, env.extraReadOnly);
  t = await startRuntime({ poolSize: 1, installTimeoutMs: INSTALL, packageHosts });
}, INSTALL);
afterAll(() => t?.close());

let version = 100;

/** Stores `source` as a new version of `appId` and returns a start of it on the general lane. */
async function release(appId: string, source: Buffer, sourceHash: string) {
  version += 1;
  const sourceKey = mintSourceKey(appId, version);
  await t.store.put(sourceKey, source);
  return async () => {
    const sandbox = await claimOnly(t, 'node', appId);
    const lines: LogLine[] = [];
    sandbox.onLog((line) => lines.push(line));
    const started = performance.now();
    await t.runtime.inject(sandbox, {
      ...{ appId, ownerId: 'owner', version, sourceKey, sourceHash },
      ...{ template: 'node', lane: 'general' as const },
      ...{ env: [], allowedHosts: [] },
    });
    const ms = performance.now() - started;
    const body = (await request(sandbox, '/')).body;
    await t.runtime.reap(sandbox);
    return { body, ms, installLines: lines.filter((l) => l.text.startsWith('[install]')) };
  };
}

describe('built trees of the general lane', () => {
  it(
    'installs a release once; its next start unpacks the built tree, with no install',
    async () => {
      const start = await release('kept', await tarGz(await depApp()), 'sha256:kept-1');
      const first = await start();
      expect(first.body).toBe(SERVER_BODY);
      expect(first.installLines.length).toBeGreaterThan(0);
      const again = await start();
      expect(again.body).toBe(SERVER_BODY);
      expect(again.installLines).toEqual([]);
      expect(t.logs.map((l) => l.msg)).toContain('app restored from its built tree, no install');
      console.log(
        `general lane start: installed ${first.ms.toFixed(0)} ms, restored ${again.ms.toFixed(0)} ms`,
      );
    },
    INSTALL,
  );

  it(
    'drops a built tree the agent cannot unpack and installs instead',
    async () => {
      const start = await release('broken', await tarGz(await depApp()), 'sha256:broken-1');
      await start();
      const dir = join(t.dataDir, 'artifacts');
      for (const name of readdirSync(dir)) writeFileSync(join(dir, name), 'not a gzip stream');
      const again = await start();
      expect(again.body).toBe(SERVER_BODY);
      expect(again.installLines.length).toBeGreaterThan(0);
      expect(t.logs.map((l) => l.msg)).toContain('built tree unusable, removed; installing');
    },
    INSTALL,
  );

  it(
    'never shares a built tree between apps, even for the same source',
    async () => {
      const source = await tarGz(await depApp());
      const mine = await release('owner-a', source, 'sha256:same');
      await mine();
      const theirs = await release('owner-b', source, 'sha256:same');
      expect((await theirs()).installLines.length).toBeGreaterThan(0);
    },
    INSTALL,
  );
});

describe('artifact keys', () => {
  it('change with the app, its owner, the source, the env the build saw and the toolchain', () => {
    const base = {
      appId: 'a',
      ownerId: 'alice',
      sourceHash: 'sha256:1',
      template: 'node',
      env: [{ name: 'API', value: 'x' }],
      toolchain: 'v20',
    };
    const keys = new Set([
      artifactKey(base),
      artifactKey({ ...base, appId: 'b' }),
      artifactKey({ ...base, ownerId: 'bob' }),
      artifactKey({ ...base, sourceHash: 'sha256:2' }),
      artifactKey({ ...base, env: [{ name: 'API', value: 'y' }] }),
      artifactKey({ ...base, toolchain: 'v22' }),
      artifactKey({ ...base, build: 'npx vite build' }),
      artifactKey({ ...base, build: 'npx vite build --outDir out' }),
    ]);
    expect(keys.size).toBe(8);
    expect(artifactKey({ ...base })).toBe(artifactKey(base));
    expect(artifactKey(base)).toMatch(/^a\.[0-9a-f]{64}$/);
  });
});

describe('artifact store', () => {
  it('refuses an upload over its cap as it streams, keeping nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-art-'));
    try {
      const store = openArtifactStore(dir, { maxBytes: 1000, totalBytes: 10_000 });
      const key = `app.${'a'.repeat(64)}`;
      await expect(store.write(key, Readable.from([Buffer.alloc(1001)]))).rejects.toThrow(
        /larger than 1000 bytes/,
      );
      expect(store.has(key)).toBe(false);
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps nothing of a refused upload while the thread pool is busy', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-art-'));
    try {
      const store = openArtifactStore(dir, { maxBytes: 1000, totalBytes: 10_000 });
      // Its four threads busy: a file open waits behind this work, past the body's refusal.
      const busy = Array.from({ length: 4 }, () =>
        promisify(pbkdf2)('x', 'salt', 200_000, 32, 'sha256'),
      );
      await expect(
        store.write(`app.${'b'.repeat(64)}`, Readable.from([Buffer.alloc(1001)])),
      ).rejects.toThrow(/larger than 1000 bytes/);
      await Promise.all(busy);
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('evicts the least recently used past its total, never the one just written', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-art-'));
    try {
      const store = openArtifactStore(dir, { maxBytes: 1000, totalBytes: 1500 });
      const keys = ['a', 'b', 'c'].map((x) => `app.${x.repeat(64)}`);
      const [a, b, c] = keys as [string, string, string];
      await store.write(a, Readable.from([Buffer.alloc(600)]));
      await store.write(b, Readable.from([Buffer.alloc(600)]));
      // Reading a marks it used: b is now the oldest.
      const opened = store.open(a);
      opened?.stream.destroy();
      await store.write(c, Readable.from([Buffer.alloc(600)]));
      expect([store.has(a), store.has(b), store.has(c)]).toEqual([true, false, true]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("removes an app's artifacts with the app, and those kept before keys named an owner", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-art-'));
    try {
      writeFileSync(join(dir, `${'d'.repeat(64)}.tar.gz`), 'unowned');
      const store = openArtifactStore(dir, { maxBytes: 1000, totalBytes: 10_000 });
      expect(readdirSync(dir)).toEqual([]);
      const [gone, also, kept] = [
        `app.${'a'.repeat(64)}`,
        `app.${'b'.repeat(64)}`,
        `app-2.${'a'.repeat(64)}`,
      ];
      for (const key of [gone, also, kept])
        await store.write(key, Readable.from([Buffer.alloc(10)]));
      store.removeApp('app');
      expect([store.has(gone), store.has(also), store.has(kept)]).toEqual([false, false, true]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
