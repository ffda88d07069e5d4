import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { eventually } from '../runtime/support.js';
import { deploy, fetchApp } from '../support/deploy.js';
import { freePort, startServerProcess, type ServerProcess } from '../support/server-process.js';
import { tarGz } from '../support/tarball.js';

/**
 * `npm run backup` while the real server takes a burst of deploys, then `npm run restore` into a
 * fresh data dir served on another port: every deploy acknowledged before the backup began serves
 * there, byte for byte.
 */
const KEY = `backup-admin-${randomBytes(16).toString('hex')}`;
const ROOT = join(import.meta.dirname, '..', '..');
const APPS = 30;
const BACKUP_AFTER = 10;
const PARALLEL = 5;

const root = mkdtempSync(join(tmpdir(), 'slipway-backup-'));
const dataA = join(root, 'a', 'data');
const dataB = join(root, 'b', 'data');
const archive = join(root, 'slipway-backup.tar.gz');
const running: ServerProcess[] = [];
for (const side of ['a', 'b']) mkdirSync(join(root, side));

afterAll(async () => {
  for (const server of running) await server.stop('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

/** Runs `npm run <script> -- <args>` with the config file `config`; resolves exit code and output. */
function npmRun(
  script: string,
  args: string[],
  config: string,
): Promise<{ code: number | null; output: string }> {
  const child = spawn('npm', ['run', '-s', script, '--', ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, SVC_CONFIG: config },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, output })));
}

describe('backup and restore', () => {
  it('a backup during 30 deploys restores, on another port, every deploy acknowledged before it', async () => {
    const portA = await freePort();
    const serverA = await startServerProcess({
      dataDir: dataA,
      port: portA,
      env: { SVC_AUTH_API_KEY: KEY },
      readyTimeoutMs: 90_000,
    });
    running.push(serverA);
    const configA = join(dataA, '..', `slipway-${portA}.yaml`);

    const pages = new Map<string, string>();
    const acknowledged: string[] = [];
    let ackedBefore: string[] | undefined;
    let backup: Promise<{ code: number | null; output: string }> | undefined;
    const names = Array.from({ length: APPS }, (_, i) => `bk-${i}`);
    const queue = [...names];
    const worker = async (): Promise<void> => {
      for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
        const page = `<!doctype html><p>${name} ${randomBytes(12).toString('hex')}</p>\n`;
        pages.set(name, page);
        const res = await deploy(
          serverA.baseURL,
          KEY,
          { name },
          await tarGz({ 'index.html': page }),
        );
        // 200: serving; 202: recorded and still starting (slow on a busy machine). Both acknowledge.
        expect([200, 202], `${name}: ${JSON.stringify(res.body)}`).toContain(res.status);
        acknowledged.push(name);
        if (acknowledged.length === BACKUP_AFTER) {
          // Taken while the other workers' deploys are in flight.
          ackedBefore = [...acknowledged];
          backup = npmRun('backup', [archive], configA);
        }
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));
    const made = await (backup as NonNullable<typeof backup>);
    expect(made.code, made.output).toBe(0);
    expect(made.output).toMatch(/backed up .* source blob\(s\)/);
    expect(acknowledged).toHaveLength(APPS);
    expect(statSync(archive).mode & 0o777).toBe(0o600);
    expect(await serverA.stop('SIGTERM')).toBe(0);

    const configB = join(root, 'b', 'slipway.yaml');
    writeFileSync(configB, stringify({ server: { dataDir: dataB } }));
    const restored = await npmRun('restore', [archive], configB);
    expect(restored.code, restored.output).toBe(0);
    expect(restored.output).toMatch(/restored the backup of .* into /);

    // A second restore over it is refused, and changes nothing.
    const again = await npmRun('restore', [archive], configB);
    expect(again.code).toBe(1);
    expect(again.output).toContain(`${dataB} is not empty`);

    // Every blob restored is the one A stored, byte for byte.
    const restoredBlobs = readdirSync(join(dataB, 'sources'));
    expect(restoredBlobs.length).toBeGreaterThanOrEqual(BACKUP_AFTER);
    for (const name of restoredBlobs) {
      expect(readFileSync(join(dataB, 'sources', name))).toEqual(
        readFileSync(join(dataA, 'sources', name)),
      );
    }

    const portB = await freePort();
    const serverB = await startServerProcess({
      dataDir: dataB,
      port: portB,
      env: { SVC_AUTH_API_KEY: KEY },
      readyTimeoutMs: 120_000,
    });
    running.push(serverB);
    for (const name of ackedBefore ?? []) {
      let last = '';
      await eventually(
        async () => {
          const res = await fetchApp(`http://${name}.localhost:${portB}/`);
          last = `${res.status} ${res.body}`;
          return res.status === 200;
        },
        `${name} to serve on the restored server`,
        60_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message}: ${last}`);
      });
      const res = await fetchApp(`http://${name}.localhost:${portB}/`);
      expect(res.body, name).toBe(pages.get(name));
    }
    expect(ackedBefore).toHaveLength(BACKUP_AFTER);
  }, 600_000);
});
