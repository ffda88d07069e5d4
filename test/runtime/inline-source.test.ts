/**
 * A small source rides in its inject request; a larger one is pulled through the source door as
 * before. Real sandboxes over a store that notes who opened each blob: the host's read for the
 * request (SourceStore.readWhole) or the door serving the agent's pull (source-door.ts).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTROL_MAX_BODY, INLINE_SOURCE_MAX } from '../../src/agent/protocol.js';
import { createDiskSourceStore } from '../../src/sources/disk-source-store.js';
import { mintSourceKey } from '../../src/sources/keys.js';
import type { SourceStore } from '../../src/sources/source-store.js';
import { tarGz, type TarEntries } from '../support/tarball.js';
import { claimOnly, request, startRuntime, type TestRuntime } from './support.js';

const SERVER = `require('node:http').createServer((req, res) => res.end('served ' + require('node:fs').statSync(__dirname + '/data.txt').size)).listen(process.env.PORT);`;

let t: TestRuntime;
let dir: string;
let blobs: SourceStore;
/** Per blob, who opened it, in order. */
const openedBy = new Map<string, string[]>();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'inline-source-'));
  const disk = createDiskSourceStore(dir);
  const note = (key: string, by: string) => openedBy.set(key, [...(openedBy.get(key) ?? []), by]);
  blobs = {
    ...disk,
    // The host's read for the inject request.
    readWhole: async (key, max) => {
      const data = await disk.readWhole(key, max);
      if (data) note(key, 'request');
      return data;
    },
    open: async (key) => {
      note(key, new Error().stack?.includes('source-door.ts') ? 'door' : 'other');
      return disk.open(key);
    },
  };
  t = await startRuntime({ poolSize: 1, sourceStore: blobs });
});
afterAll(async () => {
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

let version = 0;
async function deployNode(
  files: TarEntries,
  env: { name: string; value: string }[] = [],
): Promise<{ key: string; body: string }> {
  version += 1;
  const key = mintSourceKey('inline', version);
  await blobs.put(key, await tarGz(files));
  const sandbox = await claimOnly(t, 'node', 'inline');
  await t.runtime.inject(sandbox, {
    ...{ appId: 'inline', version, sourceKey: key, template: 'node', lane: 'fast' },
    ...{ env, allowedHosts: [] },
  });
  const reply = await request(sandbox, '/');
  expect(reply.status).toBe(200);
  await t.runtime.reap(sandbox);
  return { key, body: reply.body };
}

describe('the source of an inject', () => {
  it('goes with the request when it is small: the door is never asked for it', async () => {
    const { key, body } = await deployNode({ 'server.js': SERVER, 'data.txt': 'small' });
    expect(body).toBe('served 5');
    expect(openedBy.get(key)).toEqual(['request']);
  });

  it('is pulled through the door when it is over the inline limit', async () => {
    // Random bytes do not compress: the tarball stays over the limit.
    const data = randomBytes(INLINE_SOURCE_MAX).toString('base64');
    const { key, body } = await deployNode({ 'server.js': SERVER, 'data.txt': data });
    expect((await blobs.size(key)) ?? 0).toBeGreaterThan(INLINE_SOURCE_MAX);
    expect(body).toBe(`served ${data.length}`);
    expect(openedBy.get(key)).toEqual(['door']);
  });

  it('is pulled through the door when the env leaves the request no room for it', async () => {
    // A source under the limit whose base64 and the env together are over what the agent reads.
    const data = randomBytes(INLINE_SOURCE_MAX * 0.75).toString('base64');
    const env = [{ name: 'BIG', value: 'x'.repeat(CONTROL_MAX_BODY * 0.8) }];
    const { key, body } = await deployNode({ 'server.js': SERVER, 'data.txt': data }, env);
    expect((await blobs.size(key)) ?? Infinity).toBeLessThanOrEqual(INLINE_SOURCE_MAX);
    expect(body).toBe(`served ${data.length}`);
    // Read for the request, found too big for it, then served by the door.
    expect(openedBy.get(key)).toEqual(['request', 'door']);
  });

  it('is not inlined when the blob is missing: the door reports it as it always did', async () => {
    expect(await blobs.readWhole(mintSourceKey('inline', 999), INLINE_SOURCE_MAX)).toBeUndefined();
  });
});
