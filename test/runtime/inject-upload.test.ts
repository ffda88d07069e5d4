/**
 * An inject from the upload in hand (a deploy's head start): a small source goes along as it
 * came, without the store; anything the store serves waits until the store has it.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INLINE_SOURCE_MAX } from '../../src/agent/protocol.js';
import type { InjectSpec } from '../../src/runtime/runtime.js';
import { mintSourceKey } from '../../src/sources/keys.js';
import { tarGz } from '../support/tarball.js';
import { claimOnly, request, startRuntime, type TestRuntime } from './support.js';

const SERVER = `require('node:http').createServer((q, s) => s.end('up')).listen(process.env.PORT);`;

let t: TestRuntime;
beforeAll(async () => {
  t = await startRuntime({ poolSize: 1 });
});
afterAll(async () => {
  await t?.close();
});

function specOf(sourceKey: string): InjectSpec {
  return {
    appId: 'upload',
    version: 1,
    sourceKey,
    template: 'node',
    lane: 'fast',
    env: [],
    allowedHosts: [],
  };
}

describe('inject from the upload in hand', () => {
  it('sends a small source as it came, before the store has it (it never does here)', async () => {
    const sandbox = await claimOnly(t, 'node', 'upload');
    const source = await tarGz({ 'server.js': SERVER });
    const never = new Promise<void>(() => undefined);
    await t.runtime.inject(sandbox, specOf(mintSourceKey('upload', 1)), { source, stored: never });
    expect((await request(sandbox, '/')).body).toBe('up');
    await t.runtime.reap(sandbox);
  });

  it('lets the agent pull a source too big to go along only once the store has it', async () => {
    const sandbox = await claimOnly(t, 'node', 'upload');
    // Random bytes do not compress: the tarball is over the inline limit.
    const source = await tarGz({
      'server.js': SERVER,
      'blob.bin': randomBytes(INLINE_SOURCE_MAX + 1024).toString('base64'),
    });
    expect(source.length).toBeGreaterThan(INLINE_SOURCE_MAX);
    const key = mintSourceKey('upload', 2);
    // The store failed: the pull never begins, and that failure is the inject's.
    const refused = Promise.reject(new Error('the disk is full'));
    await expect(
      t.runtime.inject(sandbox, specOf(key), { source, stored: refused }),
    ).rejects.toThrow('the disk is full');

    const other = await claimOnly(t, 'node', 'upload');
    let store: () => void = () => undefined;
    const stored = new Promise<void>((resolve) => (store = resolve));
    const injecting = t.runtime.inject(other, specOf(key), { source, stored });
    await t.store.put(key, source);
    store();
    await injecting;
    expect((await request(other, '/')).body).toBe('up');
    await t.runtime.reap(other);
  });
});
