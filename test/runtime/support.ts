import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mintSourceKey } from '../../src/sources/keys.js';
import { createDiskSourceStore } from '../../src/sources/disk-source-store.js';
import type { SourceStore } from '../../src/sources/source-store.js';
import type { EnvItem } from '../../src/persistence/store.js';
import {
  createLocalRuntime,
  type LocalRuntime,
  type LocalRuntimeOptions,
} from '../../src/runtime/local/local-runtime.js';
import type { LocalSandbox } from '../../src/runtime/local/sandbox.js';
import type { Sandbox } from '../../src/runtime/runtime.js';
import { tarGz, type TarEntries } from '../support/tarball.js';

export interface TestRuntime {
  runtime: LocalRuntime;
  store: SourceStore;
  dataDir: string;
  agentToken: string;
  logs: { msg: string; extra?: object }[];
  close(): Promise<void>;
}

/** A real local runtime over a temp dataDir, with pools of `poolSize` per template. */
export async function startRuntime(
  overrides: Partial<LocalRuntimeOptions> = {},
): Promise<TestRuntime> {
  const dataDir = mkdtempSync(join(tmpdir(), 'slipway-rt-'));
  // mkdtemp makes it 0700; sandboxes run as uid 65534, which must be able to reach its subdirs.
  chmodSync(dataDir, 0o711);
  const store = createDiskSourceStore(join(dataDir, 'sources'));
  const agentToken = randomBytes(32).toString('hex');
  const logs: { msg: string; extra?: object }[] = [];
  const runtime = createLocalRuntime({
    dataDir,
    sourceStore: store,
    agentToken,
    poolSize: 1,
    startTimeoutMs: 5_000,
    memoryLimitMB: 256,
    pidsLimit: 128,
    allowPrivate: [],
    log: (_level, msg, extra) => logs.push(extra === undefined ? { msg } : { msg, extra }),
    ...overrides,
  });
  await runtime.start();
  await runtime.settled();
  return {
    runtime,
    store,
    dataDir,
    agentToken,
    logs,
    close: async () => {
      await runtime.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

let version = 0;

export interface DeployOptions {
  env?: EnvItem[];
  entrypoint?: string;
  allowedHosts?: string[];
  appId?: string;
  lane?: 'fast' | 'general';
}

/** Stores the files as a source, claims a sandbox of the template and injects it. */
export async function deploy(
  t: TestRuntime,
  template: string,
  files: TarEntries,
  opts: DeployOptions = {},
): Promise<LocalSandbox> {
  const sandbox = await claimOnly(t, template, opts.appId);
  await inject(t, sandbox, template, files, opts);
  return sandbox;
}

export async function claimOnly(t: TestRuntime, template: string, appId = 'test-app') {
  return (await t.runtime.claim(template, appId)) as LocalSandbox;
}

export async function inject(
  t: TestRuntime,
  sandbox: Sandbox,
  template: string,
  files: TarEntries,
  opts: DeployOptions = {},
): Promise<void> {
  const appId = opts.appId ?? 'test-app';
  version += 1;
  const sourceKey = mintSourceKey(appId, version);
  await t.store.put(sourceKey, await tarGz(files));
  await t.runtime.inject(sandbox, {
    appId,
    version,
    sourceKey,
    template,
    lane: opts.lane ?? 'fast',
    env: opts.env ?? [],
    allowedHosts: opts.allowedHosts ?? [],
    ...(opts.entrypoint ? { entrypoint: opts.entrypoint } : {}),
  });
}

export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** One HTTP/1.1 request through `sandbox.connect()`, the way the router proxies. */
export function request(
  sandbox: Sandbox,
  path: string,
  method = 'GET',
  extraHeaders = '',
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const socket = sandbox.connect();
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const split = raw.indexOf('\r\n\r\n');
      if (split === -1) return reject(new Error(`no HTTP response: ${JSON.stringify(raw)}`));
      const [statusLine = '', ...lines] = raw.slice(0, split).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      let body = raw.slice(split + 4);
      if (headers['transfer-encoding'] === 'chunked') body = unchunk(body);
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body });
    });
    socket.write(
      `${method} ${path} HTTP/1.1\r\nHost: app\r\nConnection: close\r\n${extraHeaders}\r\n`,
    );
  });
}

/** A JSON report an app serves at `/`. */
export async function report<T>(sandbox: Sandbox): Promise<T> {
  const reply = await request(sandbox, '/');
  if (reply.status !== 200) throw new Error(`app answered ${reply.status}: ${reply.body}`);
  return JSON.parse(reply.body) as T;
}

function unchunk(body: string): string {
  let out = '';
  let rest = body;
  for (;;) {
    const eol = rest.indexOf('\r\n');
    const size = parseInt(rest.slice(0, eol), 16);
    if (!size) return out;
    out += rest.slice(eol + 2, eol + 2 + size);
    rest = rest.slice(eol + 2 + size + 2);
  }
}

/** Host pids of a process and all its descendants. */
export function processTreeOf(root: number): number[] {
  const parents = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  const tree = existsSync(`/proc/${root}`) ? [root] : [];
  for (let i = 0; i < tree.length; i += 1) {
    for (const [pid, ppid] of parents) if (ppid === tree[i]) tree.push(pid);
  }
  return tree;
}

/** Waits until the condition holds, polling; fails with `what` after the timeout. */
export async function eventually(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * The sandbox cgroup dirs (`…/slipway/<instance>/sb-<id>`) a host pid is in, one per hierarchy
 * (v1 memory, pids, cpu; or the v2 one). Empty for a pid outside any sandbox cgroup.
 */
export function sandboxCgroupsOf(pid: number): string[] {
  const dirs: string[] = [];
  for (const line of readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n')) {
    const [, controllers = '', path = ''] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
    if (!/\/slipway\/[0-9a-f]+\/sb-/.test(path)) continue;
    const mount = controllers === '' ? '/sys/fs/cgroup/unified' : `/sys/fs/cgroup/${controllers}`;
    dirs.push(`${existsSync(mount) ? mount : '/sys/fs/cgroup'}${path}`);
  }
  return dirs;
}
