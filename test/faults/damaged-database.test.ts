import { randomBytes } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  utimesSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/persistence/sqlite-store.js';
import { ORPHAN_GRACE_MS } from '../../src/services/orphan-blobs.js';
import { eventually } from '../runtime/support.js';
import { nodeApp } from '../support/apps.js';
import { deploy, fetchApp } from '../support/deploy.js';
import { freePort, startServerProcess, type ServerProcess } from '../support/server-process.js';

/**
 * A stopped server whose database file was lost or damaged: the real process refuses to start
 * (exit 1), names the file and the restore command, and leaves every source blob where it was.
 */
const KEY = `damaged-admin-${randomBytes(16).toString('hex')}`;
const root = mkdtempSync(join(tmpdir(), 'slipway-damaged-db-'));
const dataDir = join(root, 'data');
const dbFile = join(dataDir, 'slipway.db');
const goodCopy = join(root, 'good.db');
const running: ServerProcess[] = [];
let port: number;
let blobsBefore: string[];

const blobs = (): string[] => readdirSync(join(dataDir, 'sources')).sort();

beforeAll(async () => {
  port = await freePort();
  const server = await startServerProcess({ dataDir, port, env: { SVC_AUTH_API_KEY: KEY } });
  running.push(server);
  for (const name of ['alpha', 'beta']) {
    const res = await deploy(server.baseURL, KEY, { name }, await nodeApp(`${name}-v1`));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }
  expect(await server.stop('SIGTERM')).toBe(0);
  copyFileSync(dbFile, goodCopy);
  blobsBefore = blobs();
  expect(blobsBefore.filter((name) => name.endsWith('.tar.gz'))).toHaveLength(2);
}, 120_000);

afterAll(async () => {
  for (const server of running) await server.stop('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

/** Starts the server on the damaged data dir and returns its exit code and output. */
async function startRefused(): Promise<{ code: number | string; output: string }> {
  const server = await startServerProcess({
    dataDir,
    port,
    env: { SVC_AUTH_API_KEY: KEY },
    noWait: true,
  });
  running.push(server);
  const code = await server.exited;
  return { code, output: server.output().join('\n') };
}

function damage(how: (file: string) => void): void {
  copyFileSync(goodCopy, dbFile);
  for (const side of ['-wal', '-shm']) rmSync(`${dbFile}${side}`, { force: true });
  how(dbFile);
}

describe('a damaged database with sources beside it', () => {
  const cases: [string, (file: string) => void, RegExp][] = [
    [
      '0 bytes',
      (file) => truncateSync(file, 0),
      /is empty \(0 bytes\), but .* holds 2 source blobs/,
    ],
    ['missing', (file) => rmSync(file), /is missing, but .* holds 2 source blobs/],
    [
      'truncated to half',
      (file) => truncateSync(file, Math.floor(readFileSync(goodCopy).length / 2)),
      /is damaged: SQLite says ".+" \(SQLITE_CORRUPT/,
    ],
    [
      'header overwritten',
      (file) => {
        const bytes = readFileSync(file);
        bytes.fill(0x41, 0, 100);
        writeFileSync(file, bytes);
      },
      /is damaged: SQLite says "file is not a database" \(SQLITE_NOTADB\)/,
    ],
  ];

  it.each(cases)(
    '%s: exit 1 naming the file and the restore, every blob kept',
    async (_, how, why) => {
      damage(how);
      const { code, output } = await startRefused();
      expect(code, output).toBe(1);
      expect(output).toContain(`the database ${dbFile} `);
      expect(output).toMatch(why);
      expect(output).toContain('npm run restore -- <backup archive>');
      expect(blobs()).toEqual(blobsBefore);
    },
    60_000,
  );

  it('a valid but reset database: the sweep refuses and logs at error, every blob kept', async () => {
    const reset = join(root, 'reset.db');
    openSqliteStore(reset).close();
    damage((file) => copyFileSync(reset, file));
    // Past the grace: only the store's word stands between these blobs and the sweep.
    const longAgo = (Date.now() - ORPHAN_GRACE_MS - 60_000) / 1000;
    for (const name of blobs()) utimesSync(join(dataDir, 'sources', name), longAgo, longAgo);
    const server = await startServerProcess({ dataDir, port, env: { SVC_AUTH_API_KEY: KEY } });
    running.push(server);
    await eventually(
      () => server.output().some((line) => line.includes('orphan source blob sweep refused')),
      'the start sweep to refuse',
    );
    const refusal = server.output().find((line) => line.includes('sweep refused')) ?? '';
    expect(JSON.parse(refusal)).toMatchObject({
      level: 50,
      blobs: 2,
      unreferenced: 2,
      versions: 0,
    });
    expect(blobs()).toEqual(blobsBefore);
    expect(existsSync(join(dataDir, 'quarantine'))).toBe(false);
    expect(await server.stop('SIGTERM')).toBe(0);
  }, 120_000);

  it('starts again and serves once the good file is back', async () => {
    damage(() => undefined);
    const server = await startServerProcess({ dataDir, port, env: { SVC_AUTH_API_KEY: KEY } });
    running.push(server);
    const res = await fetchApp(`http://alpha.localhost:${port}/`);
    expect(res.body).toMatch(/^alpha-v1 /);
    expect(blobs()).toEqual(blobsBefore);
  }, 120_000);
});

describe('an empty data dir', () => {
  it('initialises as a new platform', async () => {
    const fresh = join(root, 'fresh');
    const server = await startServerProcess({
      dataDir: fresh,
      port: await freePort(),
      env: { SVC_AUTH_API_KEY: KEY },
    });
    running.push(server);
    const res = await fetch(`${server.baseURL}/v1/apps`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(await res.json()).toMatchObject({ items: [], total: 0 });
  }, 60_000);
});
