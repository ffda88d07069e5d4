import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AppExitError,
  RuntimeError,
  type AppExit,
  type LogLine,
} from '../../src/runtime/runtime.js';
import {
  claimOnly,
  deploy,
  eventually,
  inject,
  processTreeOf,
  request,
  sandboxCgroupsOf,
  startRuntime,
  type TestRuntime,
} from './support.js';
import { lockDataDir } from '../../src/persistence/data-dir-lock.js';
import { createLocalRuntime } from '../../src/runtime/local/local-runtime.js';
import { startTime } from '../../src/runtime/local/process-tree.js';
import { runtimeRoot } from '../../src/runtime/local/runtime-dir.js';
import { processRef, runs } from '../../src/runtime/local/teardown.js';
import { createDiskSourceStore } from '../../src/sources/disk-source-store.js';

let t: TestRuntime;

/** A runtime with no pool on `dataDir`: its start and stop do the host's housekeeping only. */
function poolless(dataDir: string) {
  return createLocalRuntime({
    dataDir,
    sourceStore: createDiskSourceStore(join(dataDir, 'sources')),
    agentToken: 'x'.repeat(64),
    poolSize: 0,
    startTimeoutMs: 5_000,
    memoryLimitMB: 256,
    pidsLimit: 128,
    allowPrivate: [],
  });
}

beforeAll(async () => {
  t = await startRuntime({ poolSize: 1, startTimeoutMs: 3_000 });
});

afterAll(async () => {
  await t?.close();
});

const NODE_SERVER = `
const http = require('node:http');
http.createServer((req, res) => {
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({
    url: req.url,
    greeting: process.env.GREETING,
    port: process.env.PORT,
    proxy: process.env.HTTPS_PROXY,
    noProxy: process.env.NO_PROXY,
    isMain: require.main === module,
    cwd: process.cwd(),
  }));
}).listen(process.env.PORT);
console.log('listening on', process.env.PORT);
console.error('a warning line');
`;

describe('local runtime: deploys', () => {
  it('serves a static site from the entrypoint dir, with content types and no traversal', async () => {
    const sandbox = await deploy(
      t,
      'static',
      {
        'public/index.html': '<h1>hello static</h1>',
        'public/css/site.css': 'body{}',
        'secret.txt': 'outside the served dir',
      },
      { entrypoint: 'public/index.html' },
    );
    const index = await request(sandbox, '/');
    expect(index.status).toBe(200);
    expect(index.body).toBe('<h1>hello static</h1>');
    expect(index.headers['content-type']).toBe('text/html; charset=utf-8');
    const css = await request(sandbox, '/css/site.css');
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    expect((await request(sandbox, '/css')).status).toBe(301);
    expect((await request(sandbox, '/missing.html')).status).toBe(404);
    expect((await request(sandbox, '/../secret.txt')).status).not.toBe(200);
    expect((await request(sandbox, '/%2e%2e/secret.txt')).status).toBe(400);
    expect((await request(sandbox, '/', 'POST')).status).toBe(405);
    await t.runtime.reap(sandbox);
  });

  it('runs a node app in the warm agent with its env, PORT, proxy and require.main', async () => {
    const sandbox = await deploy(
      t,
      'node',
      { 'server.js': NODE_SERVER },
      { env: [{ name: 'GREETING', value: 'hi there' }] },
    );
    const reply = await request(sandbox, '/x?y=1');
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.body)).toEqual({
      url: '/x?y=1',
      greeting: 'hi there',
      port: '8080',
      proxy: 'http://127.0.0.1:3128',
      noProxy: 'localhost,127.0.0.1',
      isMain: true,
      cwd: '/app',
    });
    expect(await t.runtime.health(sandbox)).toBe(true);
    await t.runtime.reap(sandbox);
    expect(await t.runtime.health(sandbox)).toBe(false);
  });

  it("is healthy while the app's own server listens, and not once the app closed it", async () => {
    const sandbox = await deploy(t, 'node', {
      'server.js': `
const http = require('node:http');
const server = http.createServer((req, res) => {
  res.setHeader('connection', 'close');
  res.end('closing');
  server.close();
});
server.listen(process.env.PORT);
setInterval(() => {}, 1000);`,
    });
    expect(await t.runtime.health(sandbox)).toBe(true);
    expect((await request(sandbox, '/')).body).toBe('closing');
    // The process lives on (its interval): only the closed server says it no longer serves.
    await eventually(async () => !(await t.runtime.health(sandbox)), 'the health check to fail');
    expect(sandbox.alive).toBe(true);
    await t.runtime.reap(sandbox);
  });

  it('runs the node app with the optimising compiler on, as plain node runs it', async () => {
    // The agent holds the optimiser while it warms up; the app must get it back. What V8 says of
    // a function forced to optimise differs between node lines, so plain node is the reference.
    const probe = `
const v8 = require('node:v8');
v8.setFlagsFromString('--allow-natives-syntax');
const status = new Function(\`
  function add(a, b) { return a + b; }
  %PrepareFunctionForOptimization(add);
  add(1, 2); add(3, 4);
  %OptimizeFunctionOnNextCall(add);
  add(5, 6);
  return %GetOptimizationStatus(add);\`)();
`;
    const plain = spawnSync(process.execPath, ['-e', `${probe}console.log(status)`], {
      encoding: 'utf8',
    });
    expect(plain.status).toBe(0);
    const sandbox = await deploy(t, 'node', {
      'server.js': `${probe}require('node:http').createServer((req, res) => res.end(String(status))).listen(process.env.PORT);`,
    });
    const reply = await request(sandbox, '/');
    expect(reply.body).toBe(plain.stdout.trim());
    await t.runtime.reap(sandbox);
  });

  it('takes a node app listening on $PORT in the agent as ready without a probe connection', async () => {
    // Its first connection is the first visitor's: no connect-and-close at start to log or count.
    const sandbox = await deploy(t, 'node', {
      'server.js': `let connections = 0;
const server = require('node:http').createServer((req, res) => res.end(String(connections)));
server.on('connection', () => (connections += 1));
server.listen(process.env.PORT);`,
    });
    expect((await request(sandbox, '/')).body).toBe('1');
    await t.runtime.reap(sandbox);
  });

  it('runs an ES module app (package type module) found through package.json main', async () => {
    const sandbox = await deploy(t, 'node', {
      'package.json': JSON.stringify({ type: 'module', main: 'src/app.js' }),
      'src/app.js': `import http from 'node:http';
import { msg } from './lib.js';
http.createServer((_, res) => res.end(msg + ' ' + (import.meta.url === 'file://' + process.argv[1]))).listen(process.env.PORT);`,
      'src/lib.js': `export const msg = 'esm ok';`,
    });
    expect((await request(sandbox, '/')).body).toBe('esm ok true');
    await t.runtime.reap(sandbox);
  });

  it('runs a python app in the pre-started interpreter, with env and its own directory on sys.path', async () => {
    const sandbox = await deploy(
      t,
      'python',
      {
        'app/main.py': `import http.server, os, sys
import helper
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = f"{helper.NAME} {os.environ['GREETING']} {os.environ['PORT']} {__name__} {os.getcwd()}".encode()
        self.send_response(200)
        self.send_header('content-length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
print('python up', flush=True)
http.server.HTTPServer(('127.0.0.1', int(os.environ['PORT'])), H).serve_forever()
`,
        'app/helper.py': `NAME = 'py'`,
      },
      { entrypoint: 'app/main.py', env: [{ name: 'GREETING', value: 'hello' }] },
    );
    expect((await request(sandbox, '/')).body).toBe('py hello 8080 __main__ /app');
    await t.runtime.reap(sandbox);
  });

  it('streams the app log lines with timestamps to onLog', async () => {
    const sandbox = await claimOnly(t, 'node');
    const lines: LogLine[] = [];
    sandbox.onLog((line) => lines.push(line));
    const before = Date.now();
    await inject(t, sandbox, 'node', { 'server.js': NODE_SERVER });
    await eventually(() => lines.length >= 2, 'two log lines');
    expect(lines).toContainEqual(
      expect.objectContaining({ stream: 'stdout', text: 'listening on 8080' }),
    );
    expect(lines).toContainEqual(
      expect.objectContaining({ stream: 'stderr', text: 'a warning line' }),
    );
    for (const line of lines) {
      expect(line.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(Date.parse(line.time)).toBeGreaterThanOrEqual(before - 5);
    }
    // Nothing of the agent's own (boot, warm-up, diagnostics) is among the app's lines.
    expect(lines.every((l) => !l.text.includes('warm') && !l.text.startsWith('{'))).toBe(true);
    await t.runtime.reap(sandbox);
  });

  it('passes raw bytes both ways (a websocket-style upgrade)', async () => {
    const sandbox = await deploy(t, 'node', {
      'server.js': `require('http').createServer().on('upgrade', (req, socket) => {
  socket.write('HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: echo\\r\\nConnection: Upgrade\\r\\n\\r\\n');
  socket.on('data', (d) => socket.write('echo:' + d));
}).listen(process.env.PORT);`,
    });
    const socket = sandbox.connect();
    let received = '';
    socket.on('data', (d: Buffer) => {
      received += d.toString();
      if (received.includes('\r\n\r\n') && !received.includes('echo:')) socket.write('ping');
    });
    socket.write('GET / HTTP/1.1\r\nHost: app\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n');
    await eventually(() => received.includes('echo:ping'), 'the echoed frame');
    expect(received.startsWith('HTTP/1.1 101')).toBe(true);
    socket.destroy();
    await t.runtime.reap(sandbox);
  });
});

describe('local runtime: failures', () => {
  it('rejects with AppExitError carrying the exit code and last lines when a node app exits at start', async () => {
    const err = await deploy(t, 'node', {
      'server.js': `console.log('starting'); console.error('config missing: DATABASE_URL'); process.exit(3);`,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppExitError);
    const exit = (err as AppExitError).exit;
    expect(exit.code).toBe(3);
    expect(exit.signal).toBeNull();
    expect(exit.lastLines).toEqual(['starting', 'config missing: DATABASE_URL']);
  });

  it('reports a node app that throws while loading like node does (code 1, the error in the lines)', async () => {
    const err = await deploy(t, 'node', {
      'server.js': `require('./missing-module');`,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppExitError);
    expect((err as AppExitError).exit.code).toBe(1);
    expect((err as AppExitError).exit.lastLines.join('\n')).toContain('missing-module');
  });

  it('reports a node app that listened and then threw while loading as exited, not ready', async () => {
    const err = await deploy(t, 'node', {
      'server.js': `require('node:http').createServer((q, s) => s.end('up')).listen(process.env.PORT);
throw new Error('config file unreadable');`,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppExitError);
    expect((err as AppExitError).exit.code).toBe(1);
    expect((err as AppExitError).exit.lastLines.join('\n')).toContain('config file unreadable');
  });

  it('reports a node app that finishes without listening as exited with code 0, at once', async () => {
    const started = Date.now();
    const err = await deploy(t, 'node', {
      'server.js': `console.log('done'); setTimeout(() => console.log('later'), 20);`,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppExitError);
    expect((err as AppExitError).exit).toMatchObject({ code: 0, lastLines: ['done', 'later'] });
    // Before the 5 s start timeout (support.ts): the exit was seen, not waited out.
    expect(Date.now() - started).toBeLessThan(4_500);
  });

  it('rejects with AppExitError when a python app exits at start', async () => {
    const err = await deploy(t, 'python', {
      'main.py': `import sys\nprint('boot failed', flush=True)\nsys.exit(4)\n`,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppExitError);
    expect((err as AppExitError).exit).toMatchObject({ code: 4, lastLines: ['boot failed'] });
  });

  it('fires onExit when an app crashes after it is Ready, then cleans the sandbox up', async () => {
    const sandbox = await claimOnly(t, 'node');
    const exits: AppExit[] = [];
    sandbox.onExit((exit) => exits.push(exit));
    await inject(t, sandbox, 'node', {
      'server.js': `require('http').createServer((req, res) => {
  res.end('bye');
  setTimeout(() => { console.error('fatal: out of cheese'); process.exit(7); }, 10);
}).listen(process.env.PORT);`,
    });
    expect(t.runtime.status().claimed).toBeGreaterThanOrEqual(1);
    expect((await request(sandbox, '/')).body).toBe('bye');
    await eventually(() => exits.length === 1, 'onExit');
    expect(exits[0]).toEqual({ code: 7, signal: null, lastLines: ['fatal: out of cheese'] });
    await eventually(() => !existsSync(sandbox.dir), 'the sandbox dir to go');
    expect(await t.runtime.health(sandbox)).toBe(false);
  });

  it('fails a deploy whose app never listens with a non-transient RuntimeError after startTimeout', async () => {
    const started = Date.now();
    const err = await deploy(t, 'node', {
      'server.js': `setInterval(() => {}, 1000); console.log('forgot to listen');`,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RuntimeError);
    expect((err as RuntimeError).transient).toBe(false);
    expect((err as RuntimeError).message).toContain('8080');
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_900);
  });

  it('refuses a missing entrypoint and a tarball escaping the tree (non-transient)', async () => {
    const noEntry = await deploy(t, 'python', { 'readme.md': '# nothing to run' }).catch(
      (e: unknown) => e,
    );
    expect(noEntry).toBeInstanceOf(RuntimeError);
    expect((noEntry as RuntimeError).transient).toBe(false);
    expect((noEntry as RuntimeError).message).toMatch(/no entrypoint/);
    const escaping = await deploy(t, 'static', {
      'index.html': 'x',
      link: { type: 'symlink', target: '../../etc/passwd' },
    }).catch((e: unknown) => e);
    expect(escaping).toBeInstanceOf(RuntimeError);
    expect((escaping as RuntimeError).message).toMatch(/leaves the source tree/);
  });

  it('refuses a template it does not have, without claiming anything', async () => {
    const err = await t.runtime.claim('ruby', 'app').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RuntimeError);
    expect((err as RuntimeError).transient).toBe(false);
    expect((err as RuntimeError).message).toContain('static, node, python');
  });
});

describe('local runtime: lifecycle', () => {
  it('reap kills the whole process tree and removes the sandbox dir; twice is fine', async () => {
    const sandbox = await deploy(t, 'python', {
      'main.py': `import http.server, os, subprocess
subprocess.Popen(['sleep', '300'])
http.server.HTTPServer(('127.0.0.1', int(os.environ['PORT'])), http.server.SimpleHTTPRequestHandler).serve_forever()
`,
    });
    const pids = processTreeOf(sandbox.pid as number).map(processRef);
    // bwrap, its pid 1, the agent, python and sleep at least
    expect(pids.length).toBeGreaterThanOrEqual(5);
    expect(existsSync(join(sandbox.dir, 'app.sock'))).toBe(true);
    await t.runtime.reap(sandbox);
    await t.runtime.reap(sandbox);
    // A running app is stopped gracefully: SIGTERM first, so bwrap's pid 1 may outlive bwrap for
    // a moment and be left a zombie for the host's init to collect. Nothing may still run.
    expect(pids.filter(runs)).toEqual([]);
    expect(existsSync(sandbox.dir)).toBe(false);
  });

  it('reaps a claimed, never-injected sandbox without leaving even a zombie', async () => {
    const sandbox = await claimOnly(t, 'node');
    const pids = processTreeOf(sandbox.pid as number).map(processRef);
    expect(pids.length).toBeGreaterThanOrEqual(3);
    await t.runtime.reap(sandbox);
    // Not even a zombie: the stat file of the very process is gone (its pid may be another's now).
    expect(pids.filter((ref) => startTime(ref.pid) === ref.started)).toEqual([]);
    expect(existsSync(sandbox.dir)).toBe(false);
  });

  it('refills the pool after a claim and reports pools, claims and limits in status', async () => {
    await t.runtime.settled();
    const full = t.runtime.status();
    expect(full.ok).toBe(true);
    expect(full.backend).toBe('local');
    for (const template of ['static', 'node', 'python']) {
      expect(full.pools[template]).toEqual({ idle: 1, target: 1, booting: 0 });
    }
    expect(typeof full.limits.enforced).toBe('boolean');
    expect(full.limits.detail).toMatch(full.limits.enforced ? /cgroup/ : /not enforced: .+/);

    const sandbox = await claimOnly(t, 'static');
    expect(t.runtime.status().pools.static?.idle).toBe(0);
    expect(t.runtime.status().claimed).toBe(1);
    await eventually(
      () => t.runtime.status().pools.static?.idle === 1,
      'the static pool to refill',
    );
    await t.runtime.reap(sandbox);
    expect(t.runtime.status().claimed).toBe(0);
  });

  it('drops and replaces idle sandboxes that died', async () => {
    await t.runtime.settled();
    const died = () => t.logs.filter((l) => l.msg.includes('idle sandbox died')).length;
    const before = died();
    // Kill every agent of this runtime behind the pool's back (all are idle at this point).
    const agents = processTreeOf(process.pid).filter((pid) =>
      cmdline(pid).startsWith(`${process.execPath}\0/opt/slipway/agent.mjs`),
    );
    expect(agents.length).toBe(3);
    agents.forEach((pid) => process.kill(pid, 'SIGKILL'));
    await eventually(() => died() >= before + 3, 'the pool to notice all three');
    await t.runtime.settled();
    await eventually(
      () => Object.values(t.runtime.status().pools).every((p) => p.idle === 1),
      'the pools to refill',
    );
    const sandbox = await deploy(t, 'static', { 'index.html': 'alive' });
    expect((await request(sandbox, '/')).body).toBe('alive');
    await t.runtime.reap(sandbox);
  });
});

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch (err) {
    // Exited since the scan: not an agent any more.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw err;
  }
}

describe('local runtime: shutdown', () => {
  it('stop() reaps idle and claimed sandboxes alike and leaves no process or sandbox dir', async () => {
    await t.runtime.settled();
    const sandboxProcesses = () =>
      processTreeOf(process.pid).filter((pid) => cmdline(pid).includes('/opt/slipway/agent.mjs'));
    const others = new Set(sandboxProcesses());
    const own = await startRuntime({ poolSize: 1 });
    const app = await deploy(own, 'static', { 'index.html': 'x' });
    const pids = sandboxProcesses()
      .filter((pid) => !others.has(pid))
      .map(processRef);
    // bwrap, its pid 1 and the agent for each of: the claimed one and at least two idle ones
    expect(pids.length).toBeGreaterThanOrEqual(9);
    await own.runtime.stop();
    expect(pids.filter(runs)).toEqual([]);
    // The whole runtime dir goes with the last sandbox, its sockets and agent bundle included.
    expect(existsSync(app.dir)).toBe(false);
    expect(existsSync(dirname(dirname(app.dir)))).toBe(false);
    expect(own.runtime.status().ok).toBe(false);
    await expect(own.runtime.claim('node', 'late')).rejects.toBeInstanceOf(RuntimeError);
    await own.close();
  });

  it.each([
    ['the same data dir', (dataDir: string) => dataDir],
    ['another data dir', () => mkdtempSync(join(tmpdir(), 'slipway-rt-next-'))],
  ])(
    'leaves no orphan when the control plane is killed; starting %s removes its leftovers',
    async (_, nextDir) => {
      const fixture = fileURLToPath(new URL('./fixtures/hold-runtime.ts', import.meta.url));
      const child = spawn(process.execPath, ['--import', 'tsx', fixture], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const first = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
        });
        child.on('exit', (code) => reject(new Error(`fixture exited with ${code}`)));
        setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error('fixture did not report within 20 s'));
        }, 20_000).unref();
      });
      const reported = JSON.parse(first) as { pids: number[]; dataDir: string };
      const { dataDir } = reported;
      const pids = reported.pids.map(processRef);
      let cgroups: string[] = [];
      try {
        expect(pids.length).toBeGreaterThanOrEqual(9);
        expect(pids.every(runs)).toBe(true);
        cgroups = [...new Set(reported.pids.flatMap(sandboxCgroupsOf))];
      } finally {
        child.kill('SIGKILL');
      }
      await eventually(() => !pids.some(runs), 'every sandbox process to die');
      // The kill left their cgroups and its runtime dir behind; the next start removes them at once.
      const runtimeDir = runtimeRoot(dataDir, undefined);
      expect(existsSync(runtimeDir)).toBe(true);
      expect(cgroups.length).toBeGreaterThanOrEqual(6);
      expect(cgroups.filter((dir) => existsSync(dir))).toEqual(cgroups);
      const next = nextDir(dataDir);
      const again = poolless(next);
      await again.start();
      try {
        expect(cgroups.filter((dir) => existsSync(dir))).toEqual([]);
        if (next !== dataDir) expect(existsSync(runtimeDir)).toBe(false);
      } finally {
        await again.stop();
        rmSync(dataDir, { recursive: true, force: true });
        rmSync(next, { recursive: true, force: true });
      }
    },
  );
  it("spares a killed instance's runtime dir while its data dir's next server starts", async () => {
    // A killed server's runtime dir, its owner file not yet replaced by the next server, which
    // holds the data dir's lock already (startSlipway takes it first of all).
    const killed = mkdtempSync(join(tmpdir(), 'slipway-rt-killed-'));
    const runtimeDir = runtimeRoot(killed, undefined);
    mkdirSync(join(runtimeDir, 'sandboxes'), { recursive: true, mode: 0o711 });
    const owner = `999999999 1\n${JSON.stringify(realpathSync(killed))}\n`;
    writeFileSync(join(runtimeDir, 'owner'), owner);
    const next = await lockDataDir(killed);
    const other = mkdtempSync(join(tmpdir(), 'slipway-rt-other-'));
    const startOther = async (): Promise<void> => {
      const runtime = poolless(other);
      await runtime.start();
      await runtime.stop();
    };
    try {
      await startOther();
      expect(readFileSync(join(runtimeDir, 'owner'), 'utf8')).toBe(owner);
      // Once no server holds that data dir, its leftovers are anyone's to sweep.
      await next.release();
      await startOther();
      expect(existsSync(runtimeDir)).toBe(false);
    } finally {
      await next.release();
      rmSync(runtimeDir, { recursive: true, force: true });
      rmSync(killed, { recursive: true, force: true });
      rmSync(other, { recursive: true, force: true });
    }
  });
});
