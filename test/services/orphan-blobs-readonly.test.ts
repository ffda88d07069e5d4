import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ORPHAN_GRACE_MS } from '../../src/services/orphan-blobs.js';
import { eventually } from '../runtime/support.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { deployStatic } from '../support/share.js';

const KEY = 'orphan-readonly-key-0123456789abcdef';
const config = { auth: { apiKeys: [{ key: KEY, name: 'owner' }] }, runtime: { poolSize: 1 } };

/**
 * A delete removes its blobs best-effort after the rows; when the source store refuses (here a
 * read-only tmpfs), the blob outlives the rows, and the sweep must take it once it can.
 */
describe('a delete while the source store is read-only', () => {
  const root = mkdtempSync(join(tmpdir(), 'slipway-ro-sources-'));
  const dataDir = join(root, 'data');
  const sources = join(dataDir, 'sources');
  let server: TestServer | undefined;
  let mounted = false;
  const mount = (...args: string[]): void => {
    execFileSync('mount', args, { stdio: 'pipe' });
  };

  beforeAll(() => {
    mkdirSync(sources, { recursive: true });
    mount('-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', sources);
    mounted = true;
  });

  afterAll(async () => {
    await server?.stop();
    if (mounted) execFileSync('umount', [sources]);
    rmSync(root, { recursive: true, force: true });
  });

  it('keeps the blob then, and the sweep removes it once the store is writable', async () => {
    server = await startTestServer(config, dataDir);
    // An app that stays: a store pointing to none of the blobs would look reset to the sweep.
    await deployStatic(server.baseURL, KEY, 'kept-app');
    const [kept, ...none] = readdirSync(sources);
    expect(none).toEqual([]);
    await deployStatic(server.baseURL, KEY, 'ro-app');
    const [blob, ...others] = readdirSync(sources).filter((name) => name !== kept);
    expect(others).toEqual([]);
    expect(blob).toMatch(/^ro-app\.v1\.[0-9a-f]{32}\.tar\.gz$/);

    mount('-o', 'remount,ro', sources);
    const del = await call(server.baseURL, '/v1/apps/ro-app', { method: 'DELETE', token: KEY });
    expect(del.status).toBe(204);
    expect((await call(server.baseURL, '/v1/apps/ro-app', { token: KEY })).status).toBe(404);
    expect(readdirSync(sources).sort()).toEqual([blob, kept].sort());

    mount('-o', 'remount,rw', sources);
    await server.stop();
    server = undefined;
    // Time passes: the blob is older than any upload still in flight could be.
    const longAgo = (Date.now() - ORPHAN_GRACE_MS - 60_000) / 1000;
    utimesSync(join(sources, String(blob)), longAgo, longAgo);
    server = await startTestServer(config, dataDir);
    await eventually(
      () => !existsSync(join(sources, String(blob))),
      'the start sweep to remove the orphan',
    );
    expect(readdirSync(sources)).toEqual([kept]);
    expect(readdirSync(join(dataDir, 'quarantine'))).toEqual([blob]);
  }, 120_000);
});
