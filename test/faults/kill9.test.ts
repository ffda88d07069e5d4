import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  watch,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { runtimeRoot } from '../../src/runtime/local/runtime-dir.js';
import { openSqliteStore } from '../../src/persistence/sqlite-store.js';
import { BlobQuarantine } from '../../src/services/blob-quarantine.js';
import { ORPHAN_GRACE_MS, sweepOrphanBlobs } from '../../src/services/orphan-blobs.js';
import { createDiskSourceStore } from '../../src/sources/disk-source-store.js';
import { mintSourceKey } from '../../src/sources/keys.js';
import { eventually, processTreeOf, sandboxCgroupsOf } from '../runtime/support.js';
import { nodeApp } from '../support/apps.js';
import { deploy, fetchApp } from '../support/deploy.js';
import { freePort, startServerProcess, type ServerProcess } from '../support/server-process.js';

const KEY = `kill9-admin-${randomBytes(16).toString('hex')}`;
const APPS = 50;
/** Deploys sent once KILL_AFTER were answered; the first of their blobs to land triggers the kill. */
const LATE = 10;
const KILL_AFTER = 15;
const LATE_BLOB = new RegExp(
  `^k9-(?:${Array.from({ length: LATE }, (_, i) => APPS - LATE + i).join('|')})\\.v1\\.[0-9a-f]{32}\\.tar\\.gz$`,
);
const BLOB = /^(.+)\.tar\.gz$/;

const root = mkdtempSync(join(tmpdir(), 'slipway-kill9-'));
const dataDir = join(root, 'data');
const running: ServerProcess[] = [];

afterAll(async () => {
  for (const server of running) await server.stop('SIGTERM', 30_000);
  rmSync(root, { recursive: true, force: true });
});

/** A /proc entry of a process that ended while we read it (ESRCH/ENODEV mid-exit, then ENOENT). */
function vanished(err: unknown): boolean {
  return ['ENOENT', 'ESRCH', 'ENODEV'].includes((err as NodeJS.ErrnoException).code ?? '');
}

/** Field 22 of /proc/<pid>/stat, so a reused pid is not taken for a survivor. */
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch (err) {
    if (vanished(err)) return undefined;
    throw err;
  }
}

/** The pids in a cgroup; none once it is gone (it may go between a look and the read). */
function pidsIn(cgroup: string): string[] {
  try {
    return readFileSync(join(cgroup, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean);
  } catch (err) {
    if (vanished(err)) return [];
    throw err;
  }
}

function mtimeOf(path: string): number {
  return statSync(path).mtimeMs;
}

function blobKeys(): string[] {
  return readdirSync(join(dataDir, 'sources')).flatMap((name) => {
    const key = BLOB.exec(name)?.[1];
    return key === undefined ? [] : [key];
  });
}

/** The source keys the versions table points to, read beside the running server. */
function referencedKeys(): Set<string> {
  const db = new Database(join(dataDir, 'slipway.db'), { readonly: true, fileMustExist: true });
  try {
    const keys = db.prepare('SELECT source_key FROM versions').pluck().all() as string[];
    return new Set(keys);
  } finally {
    db.close();
  }
}

async function api(server: ServerProcess, path: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${server.baseURL}${path}`, {
    headers: { authorization: `Bearer ${KEY}` },
  });
  expect(res.status, path).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

describe('kill -9 while 50 deploys are in flight', () => {
  it('loses no acknowledged deploy and leaves no orphan blob, sandbox or cgroup', async () => {
    const port = await freePort();
    const start = (): Promise<ServerProcess> =>
      startServerProcess({
        dataDir,
        port,
        env: { SVC_AUTH_API_KEY: KEY },
        readyTimeoutMs: 90_000,
      }).then((server) => {
        running.push(server);
        return server;
      });
    const first = await start();

    const labels = Array.from(
      { length: APPS },
      (_, i) => `k9-${i}-${randomBytes(4).toString('hex')}`,
    );
    const tarballs = await Promise.all(labels.map((label) => nodeApp(label)));
    const acknowledged = new Set<string>();
    let answered = 0;
    let enoughAnswers: () => void = () => undefined;
    const enough = new Promise<void>((resolve) => (enoughAnswers = resolve));
    const wave = (from: number, to: number): Promise<void>[] =>
      labels.slice(from, to).map((label, j) =>
        deploy(first.baseURL, KEY, { name: `k9-${from + j}` }, tarballs[from + j]).then(
          (res) => {
            // A whole answer received was sent before the process died: it is acknowledged.
            if (res.status === 200 || res.status === 202) acknowledged.add(label);
            if (++answered >= KILL_AFTER) enoughAnswers();
          },
          // The kill cuts the deploys still in flight: unanswered, so never acknowledged.
          () => undefined,
        ),
      );
    const deploys = wave(0, APPS - LATE);
    const timer = setTimeout(enoughAnswers, 90_000);
    await enough;
    clearTimeout(timer);

    // What the instance runs now: its process tree, and where its sandboxes' cgroups live.
    const serverPid = first.child.pid ?? 0;
    const tree = processTreeOf(serverPid).filter((pid) => pid !== serverPid);
    const processes = tree.flatMap((pid) => {
      const started = startTime(pid);
      return started === undefined ? [] : [{ pid, started }];
    });
    const cgroupBases = new Set(
      tree.flatMap((pid) => {
        try {
          return sandboxCgroupsOf(pid).map((dir) => dirname(dir));
        } catch (err) {
          if (vanished(err)) return [];
          throw err;
        }
      }),
    );

    // The late wave is killed the moment one of its blobs lands, before its rows can: the crash
    // this sweep exists for (a fallback kill comes if no blob shows up).
    const sourcesDir = join(dataDir, 'sources');
    const kill = (): void => {
      first.child.kill('SIGKILL');
    };
    const watcher = watch(sourcesDir, (_event, name) => {
      if (name !== null && LATE_BLOB.test(name)) kill();
    });
    deploys.push(...wave(APPS - LATE, APPS));
    const fallback = setTimeout(kill, 5_000);
    await first.exited;
    watcher.close();
    clearTimeout(fallback);
    await Promise.all(deploys);

    // What the killed instance left: its sandboxes' cgroups and dirs.
    const sandboxesDir = join(runtimeRoot(dataDir, undefined), 'sandboxes');
    const oldCgroups = [...cgroupBases].flatMap((base) =>
      readdirSync(base)
        .filter((name) => name.startsWith('sb-'))
        .map((name) => join(base, name)),
    );
    const oldSandboxes = readdirSync(sandboxesDir);

    expect(acknowledged.size, `answered ${answered}`).toBeGreaterThanOrEqual(5);
    expect(processes.length).toBeGreaterThan(0);
    expect(oldCgroups.length).toBeGreaterThan(0);
    expect(oldSandboxes.length).toBeGreaterThan(0);

    // A blob nothing points to, from long enough ago that no upload can still be in flight.
    const ghost = mintSourceKey('ghost', 1);
    const ghostPath = join(dataDir, 'sources', `${ghost}.tar.gz`);
    writeFileSync(ghostPath, 'orphan');
    const longAgo = (Date.now() - ORPHAN_GRACE_MS - 60_000) / 1000;
    utimesSync(ghostPath, longAgo, longAgo);
    const crashOrphans = blobKeys().filter((key) => !referencedKeys().has(key) && key !== ghost);

    // Its sandboxes die with it (--die-with-parent), before anything restarts.
    const alive = (): (number | string)[] => [
      ...processes.filter(({ pid, started }) => startTime(pid) === started).map((p) => p.pid),
      ...oldCgroups.filter((dir) => pidsIn(dir).length > 0),
    ];
    const diedAt = Date.now();
    await eventually(() => alive().length === 0, "the killed instance's sandboxes to die").catch(
      (err: Error) => {
        throw new Error(`${err.message}: ${JSON.stringify(alive())}`);
      },
    );
    const diedMs = Date.now() - diedAt;

    const restartedAt = Date.now();
    const second = await start();
    const restartMs = Date.now() - restartedAt;
    await eventually(() => !existsSync(ghostPath), 'the start sweep to remove the old orphan');

    // Nothing of the killed instance survives: processes, sandbox cgroups, sandbox dirs.
    expect(alive()).toEqual([]);
    expect(oldCgroups.filter((dir) => existsSync(dir))).toEqual([]);
    expect(oldSandboxes.filter((id) => existsSync(join(sandboxesDir, id)))).toEqual([]);
    const mentionsOld = readdirSync('/proc').filter((pid) => {
      if (!/^\d+$/.test(pid)) return false;
      let cmdline: string;
      try {
        cmdline = readFileSync(`/proc/${pid}/cmdline`, 'latin1');
      } catch (err) {
        if (vanished(err)) return false;
        throw err;
      }
      return oldSandboxes.some((id) => cmdline.includes(join(sandboxesDir, id)));
    });
    expect(mentionsOld).toEqual([]);

    // Every acknowledged deploy is there, with its version, and serves its own body.
    for (const label of acknowledged) {
      const id = `k9-${labels.indexOf(label)}`;
      const versions = (await api(second, `/v1/apps/${id}/versions`)).items as {
        version: number;
      }[];
      expect(versions.map((v) => v.version)).toContain(1);
      const view = await api(second, `/v1/apps/${id}`);
      const served = await fetchApp(String(view.url));
      expect(served.status, `${id}: ${served.body}`).toBe(200);
      expect(served.body.startsWith(`${label} `), `${id}: ${served.body}`).toBe(true);
      expect((await api(second, `/v1/apps/${id}`)).phase).toBe('Ready');
    }

    // The restart's sweep, with the real grace, removed the old orphan and no young blob.
    const referenced = referencedKeys();
    const left = blobKeys();
    expect(left).not.toContain(ghost);
    const unreferenced = left.filter((key) => !referenced.has(key));
    const old = Date.now() - ORPHAN_GRACE_MS;
    expect(unreferenced.filter((key) => mtimeOf(join(sourcesDir, `${key}.tar.gz`)) < old)).toEqual(
      [],
    );
    for (const label of acknowledged) {
      const id = `k9-${labels.indexOf(label)}`;
      expect(left.some((key) => key.startsWith(`${id}.v1.`))).toBe(true);
    }

    await second.stop('SIGTERM');
    running.splice(running.indexOf(second), 1);
    // Once the grace is over, the blobs the crash left (if the kill landed between a blob and its
    // rows) go too, and nothing any version points to does.
    const store = openSqliteStore(join(dataDir, 'slipway.db'));
    try {
      const later = Date.now() + ORPHAN_GRACE_MS + 1_000;
      const swept = await sweepOrphanBlobs({
        store,
        sourceStore: createDiskSourceStore(join(dataDir, 'sources')),
        quarantine: new BlobQuarantine(join(dataDir, 'quarantine')),
        log: () => undefined,
        now: () => later,
      });
      expect(swept.removed.sort()).toEqual(unreferenced.sort());
      const after = blobKeys();
      expect(after.filter((key) => !store.hasSourceKey(key))).toEqual([]);
      expect(after.length).toBe(store.sourceKeys().size);
    } finally {
      store.close();
    }
    console.log(
      `kill9: ${acknowledged.size} acknowledged of ${answered} answered before the kill, ` +
        `${processes.length} processes and ${oldCgroups.length} sandbox cgroups of the killed ` +
        `instance (all gone ${diedMs} ms after the kill), ${crashOrphans.length} blobs orphaned by ` +
        `the crash, restart ready in ${restartMs} ms`,
    );
  }, 400_000);
});
