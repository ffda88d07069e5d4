// The default start (SQLite store, served sources, bubblewrap runtime) loads neither the
// Kubernetes client nor the AWS SDK: they are imported only when the config names a backend that
// needs them. The server runs as `npm start` runs it, with a hook that logs every file it loads
// from node_modules.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, startServerProcess, type ServerProcess } from '../support/server-process.js';

const HOOK = new URL('../support/module-log.mjs', import.meta.url);
const KEY = `lazy-admin-${randomBytes(16).toString('hex')}`;
const root = mkdtempSync(join(tmpdir(), 'slipway-lazy-'));
const log = join(root, 'modules.log');
let server: ServerProcess | undefined;

afterAll(async () => {
  await server?.stop('SIGTERM', 30_000);
  rmSync(root, { recursive: true, force: true });
});

/** Packages that only the kubernetes runtime, the configmap store or S3 sources use. */
const UNUSED_BY_DEFAULT =
  /\/node_modules\/(@kubernetes\/client-node|@aws-sdk\/[^/]+|@smithy\/[^/]+)\//;

describe('the default start', () => {
  it('loads neither @kubernetes/client-node nor the AWS SDK', async () => {
    server = await startServerProcess({
      dataDir: join(root, 'data'),
      port: await freePort(),
      // No warm sandboxes to wait for: the runtime, store and sources are the default ones all the
      // same, and the start is quicker on a busy machine.
      config: { runtime: { poolSize: 0 } },
      env: {
        SVC_AUTH_API_KEY: KEY,
        NODE_OPTIONS: `--import ${pathToFileURL(HOOK.pathname).href}`,
        SLIPWAY_MODULE_LOG: log,
      },
      readyTimeoutMs: 180_000,
    });
    const apps = await fetch(`${server.baseURL}/v1/apps`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(apps.status).toBe(200);

    const loaded = readFileSync(log, 'utf8').trimEnd().split('\n');
    // The hook saw the server's own dependencies: an empty log would prove nothing.
    expect(loaded.some((file) => file.includes('/node_modules/fastify/'))).toBe(true);
    expect(loaded.some((file) => file.includes('/node_modules/better-sqlite3/'))).toBe(true);
    expect(loaded.filter((file) => UNUSED_BY_DEFAULT.test(file))).toEqual([]);
  }, 240_000);
});
