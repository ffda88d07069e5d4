import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { nodeApp } from '../support/apps.js';
import { deploy, fetchApp } from '../support/deploy.js';
import { freePort, startServerProcess, type ServerProcess } from '../support/server-process.js';

const KEY = `lock-admin-${randomBytes(16).toString('hex')}`;
const root = mkdtempSync(join(tmpdir(), 'slipway-lock-'));
const dataDir = join(root, 'data');
const running: ServerProcess[] = [];

afterAll(async () => {
  for (const server of running) await server.stop('SIGTERM', 30_000);
  rmSync(root, { recursive: true, force: true });
});

async function start(port: number, noWait = false): Promise<ServerProcess> {
  const server = await startServerProcess({
    dataDir,
    port,
    env: { SVC_AUTH_API_KEY: KEY },
    readyTimeoutMs: 90_000,
    noWait,
  });
  running.push(server);
  return server;
}

describe('one server per data dir', () => {
  it('refuses a second server at once, naming the data dir and the holder; the first goes on', async () => {
    const first = await start(await freePort());
    const before = await deploy(first.baseURL, KEY, { name: 'lock-a' }, await nodeApp('a'));
    expect(before.status).toBe(200);

    const second = await start(await freePort(), true);
    expect(await second.exited).toBe(1);
    const said = second.output().join('\n');
    expect(said).toContain(`pid ${first.child.pid}`);
    expect(said).toContain(dataDir);

    // The refused one touched nothing: the first still serves and deploys.
    expect((await fetchApp(String(before.body.url))).status).toBe(200);
    const after = await deploy(first.baseURL, KEY, { name: 'lock-b' }, await nodeApp('b'));
    expect(after.status).toBe(200);
    expect((await fetchApp(String(after.body.url))).body).toMatch(/^b /);

    // Once the first is gone, the data dir is free again, even after a kill -9.
    await first.stop('SIGKILL');
    const third = await start(await freePort());
    const res = await fetch(`${third.baseURL}/v1/apps/lock-b`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(res.status).toBe(200);
  });
});
