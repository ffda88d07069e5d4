/**
 * A shutdown shorter than the deploys in flight tells each client the truth: a deploy it saw
 * answered 2xx is stored, and one it saw fail (a reset, a 503) is not.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, watch } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { deploy } from '../support/deploy.js';
import { freePort, startServerProcess, type ServerProcess } from '../support/server-process.js';
import { tarGz } from '../support/tarball.js';

const KEY = `shutdown-admin-${randomBytes(16).toString('hex')}`;
const root = mkdtempSync(join(tmpdir(), 'slipway-shutdown-'));
const dataDir = join(root, 'data');
const running: ServerProcess[] = [];
const DEPLOYS = 35;

afterAll(async () => {
  for (const server of running) await server.stop('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

/** A node app that takes `delayMs` before it listens: its deploy waits that long for it. */
function slowApp(label: string, delayMs: number): Promise<Buffer> {
  return tarGz({
    'package.json': JSON.stringify({ name: 'slow', main: 'server.js' }),
    'server.js': `setTimeout(() => require('node:http').createServer((q, s) => s.end('${label}')).listen(process.env.PORT), ${delayMs});`,
  });
}

describe('SIGTERM with deploys longer than server.shutdownTimeout', () => {
  it('answers every committed deploy and commits none it could not answer', async () => {
    const port = await freePort();
    const start = async (): Promise<ServerProcess> => {
      const server = await startServerProcess({
        dataDir,
        port,
        config: { server: { shutdownTimeout: '2s' }, runtime: { poolSize: 2 } },
        env: { SVC_AUTH_API_KEY: KEY },
        readyTimeoutMs: 120_000,
      });
      running.push(server);
      return server;
    };
    const first = await start();
    const names = Array.from({ length: DEPLOYS }, (_, i) => `sd-${i}`);
    const sources = await Promise.all(names.map((name) => slowApp(name, 8_000)));
    // The signal comes once a third of the sources landed: some deploys are stored and wait for
    // their slow app, others are still on their way.
    const sourcesDir = join(dataDir, 'sources');
    const landed = new Promise<void>((resolve) => {
      const watcher = watch(sourcesDir, () => {
        if (readdirSync(sourcesDir).filter((f) => f.endsWith('.tar.gz')).length < 12) return;
        watcher.close();
        resolve();
      });
    });
    const outcomes = names.map((name, i) =>
      deploy(first.baseURL, KEY, { name }, sources[i]).then(
        (res) => ({ name, ok: res.status === 200 || res.status === 202, status: res.status }),
        (err: unknown) => ({ name, ok: false, status: String(err) }),
      ),
    );
    await landed;
    await first.stop('SIGTERM');
    const results = await Promise.all(outcomes);

    const second = await start();
    const stored = async (name: string): Promise<boolean> => {
      const res = await fetch(`${second.baseURL}/v1/apps/${name}/versions`, {
        headers: { authorization: `Bearer ${KEY}` },
      });
      return res.status === 200;
    };
    const wrong: string[] = [];
    for (const r of results) {
      if ((await stored(r.name)) !== r.ok) wrong.push(`${r.name}: answered ${r.status}`);
    }
    expect(wrong).toEqual([]);
    expect(results.filter((r) => r.ok).length).toBeGreaterThan(0);
    console.log(`shutdown: ${JSON.stringify(results.map((r) => r.status))}`);
  }, 300_000);
});
