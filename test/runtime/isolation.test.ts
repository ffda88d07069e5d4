import { randomBytes } from 'node:crypto';
import { rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runtimeRoot } from '../../src/runtime/local/runtime-dir.js';
import { sandboxToken } from '../../src/runtime/local/sandbox-token.js';
import type { AppExit } from '../../src/runtime/runtime.js';
import {
  claimOnly,
  deploy,
  eventually,
  inject,
  report,
  request,
  startRuntime,
  type TestRuntime,
} from './support.js';

/**
 * Each test deploys an app that tries to break out, and reports what it got. The report has to
 * show the attempt was made (so a broken probe cannot pass) and that it failed.
 */
let t: TestRuntime;
let hostServer: http.Server;
let hostPort: number;
const rootSecret = `/root/slipway-test-secret-${randomBytes(4).toString('hex')}.txt`;

beforeAll(async () => {
  t = await startRuntime({
    poolSize: 1,
    memoryLimitMB: 160,
    pidsLimit: 64,
    // The egress test reaches this host server through the gate, which must then allow loopback.
    allowPrivate: ['127.0.0.1'],
  });
  writeFileSync(join(t.dataDir, 'secret.txt'), 'data dir secret');
  writeFileSync(rootSecret, 'root secret');
  hostServer = http.createServer((_, res) => res.end('host says hi'));
  await new Promise<void>((resolve) => hostServer.listen(0, '127.0.0.1', resolve));
  hostPort = (hostServer.address() as net.AddressInfo).port;
});

afterAll(async () => {
  rmSync(rootSecret, { force: true });
  hostServer?.close();
  await t?.close();
});

/** A file of this runtime's host-side runtime dir (the parent of the sandboxes' socket dirs). */
function runtimeFile(name: string): string {
  return join(runtimeRoot(t.dataDir, undefined), name);
}

/** A node app that runs `probe` (an async function body) per request and serves its result. */
function probeApp(probe: string): Record<string, string> {
  return {
    'server.js': `const fs = require('node:fs');
const net = require('node:net');
const http = require('node:http');
const attempt = async (fn) => { try { return 'ok: ' + String(await fn()).slice(0, 500); } catch (e) { return 'error: ' + (e.code || e.message); } };
const connect = (opts) => new Promise((resolve, reject) => {
  const s = net.connect(opts); s.setTimeout(2000, () => { s.destroy(); reject(new Error('timeout')); });
  s.on('connect', () => { s.destroy(); resolve('connected'); }); s.on('error', reject);
});
http.createServer(async (req, res) => {
  const result = await (async () => { ${probe} })();
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(result));
}).listen(process.env.PORT);`,
  };
}

describe('isolation', () => {
  it('cannot read host files outside its tree, nor write outside /app and /tmp', async () => {
    const sandbox = await deploy(
      t,
      'node',
      probeApp(`
        const paths = JSON.parse(process.env.PROBE_PATHS);
        const out = { root: fs.readdirSync('/'), uid: process.getuid(), hostname: require('os').hostname() };
        for (const p of paths) out[p] = await attempt(() => fs.readFileSync(p, 'utf8'));
        out.writeUsr = await attempt(() => fs.writeFileSync('/usr/evil', 'x'));
        out.writeSockets = await attempt(() => fs.writeFileSync('/run/slipway/fill', 'x'));
        out.writeApp = await attempt(() => { fs.writeFileSync('/app/ok', 'x'); return 'written'; });
        out.mine = await attempt(() => fs.readFileSync('/app/server.js', 'utf8').length);
        return out;`),
      {
        env: [
          {
            name: 'PROBE_PATHS',
            value: JSON.stringify([
              join(t.dataDir, 'secret.txt'),
              rootSecret,
              '/etc/shadow',
              '/etc/hostname',
              '/work/main/package.json',
              runtimeFile('agent.mjs'),
            ]),
          },
        ],
      },
    );
    const r = await report<Record<string, unknown>>(sandbox);
    expect(r.mine).toMatch(/^ok: \d+/);
    expect(r.writeApp).toBe('ok: written');
    for (const path of [
      join(t.dataDir, 'secret.txt'),
      rootSecret,
      '/etc/shadow',
      '/etc/hostname',
      '/work/main/package.json',
    ]) {
      expect(r[path], path).toBe('error: ENOENT');
    }
    // The agent's own file is there (read-only, elsewhere): the host's runtime dir is not.
    expect(r[runtimeFile('agent.mjs')]).toBe('error: ENOENT');
    expect(r.root).not.toContain('root');
    expect(r.root).not.toContain('home');
    expect(r.root).not.toContain('work');
    expect(r.writeUsr).toMatch(/^error: (EROFS|EACCES)$/);
    expect(r.hostname).toBe('slipway');
    if (process.getuid?.() === 0) {
      // As root we run sandboxes as nobody, and the socket dir is given back to root after boot.
      expect(r.uid).toBe(65534);
      expect(r.writeSockets).toBe('error: EACCES');
      expect(statSync(sandbox.dir).uid).toBe(0);
    }
    await t.runtime.reap(sandbox);
  });

  it('has no route to the host: a TCP port on the host loopback or its interfaces is unreachable', async () => {
    const external = Object.values(networkInterfaces())
      .flat()
      .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
    const targets = [`127.0.0.1:${hostPort}`, ...(external ? [`${external}:${hostPort}`] : [])];
    const sandbox = await deploy(
      t,
      'node',
      probeApp(`
        const out = {};
        for (const target of JSON.parse(process.env.TARGETS)) {
          const [host, port] = target.split(':');
          out[target] = await attempt(() => connect({ host, port: Number(port) }));
        }
        out.self = await attempt(() => connect({ host: '127.0.0.1', port: Number(process.env.PORT) }));
        return out;`),
      { env: [{ name: 'TARGETS', value: JSON.stringify(targets) }] },
    );
    const r = await report<Record<string, string>>(sandbox);
    expect(r.self).toBe('ok: connected'); // the probe can connect at all
    expect(r[`127.0.0.1:${hostPort}`]).toBe('error: ECONNREFUSED');
    if (external)
      expect(r[`${external}:${hostPort}`]).toMatch(/^error: (ENETUNREACH|EHOSTUNREACH|timeout)$/);
    await t.runtime.reap(sandbox);
  });

  it('cannot find the agent token in its env, /proc/*/environ or /proc/*/cmdline (node and python)', async () => {
    const node = await claimOnly(t, 'node');
    await inject(
      t,
      node,
      'node',
      probeApp(`
        const out = { env: JSON.stringify(process.env), files: {} };
        for (const pid of fs.readdirSync('/proc').filter((n) => /^\\d+$/.test(n))) {
          for (const f of ['environ', 'cmdline']) {
            out.files['/proc/' + pid + '/' + f] = await attempt(() => fs.readFileSync('/proc/' + pid + '/' + f, 'latin1'));
          }
        }
        out.files['/proc/self/environ'] = await attempt(() => fs.readFileSync('/proc/self/environ', 'latin1'));
        return out;`),
    );
    const python = await claimOnly(t, 'python');
    await inject(t, python, 'python', {
      'main.py': `import http.server, json, os
def read(p):
    try:
        with open(p, 'rb') as f: return 'ok: ' + f.read().decode('latin1')
    except OSError as e: return 'error: ' + str(e.errno)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        files = {f'/proc/{p}/{f}': read(f'/proc/{p}/{f}') for p in os.listdir('/proc') if p.isdigit() for f in ('environ', 'cmdline')}
        files['/proc/self/environ'] = read('/proc/self/environ')
        body = json.dumps({'env': json.dumps(dict(os.environ)), 'files': files}).encode()
        self.send_response(200); self.end_headers(); self.wfile.write(body)
http.server.HTTPServer(('127.0.0.1', int(os.environ['PORT'])), H).serve_forever()
`,
    });
    for (const sandbox of [node, python]) {
      const r = await report<{ env: string; files: Record<string, string> }>(sandbox);
      const everything = JSON.stringify(r);
      // The probe did read: pid 1 is bwrap's init, and its own environment is there.
      expect(r.files['/proc/1/cmdline']).toMatch(/^ok: .*bwrap/);
      expect(r.files['/proc/self/environ']).toContain('PATH=');
      expect(r.env).toContain('PORT');
      for (const secret of [t.agentToken, sandboxToken(t.agentToken, sandbox.id)]) {
        expect(everything.includes(secret)).toBe(false);
      }
      // Nor any host path of ours: bwrap took its options from a pipe, not its argv.
      expect(everything.includes(t.dataDir)).toBe(false);
      await t.runtime.reap(sandbox);
    }
  });

  it("cannot reach another sandbox's app.sock, and its own agent.sock refuses it without the token", async () => {
    const other = await deploy(t, 'static', { 'index.html': 'other app' });
    const sandbox = await deploy(
      t,
      'node',
      probeApp(`
        const out = {};
        for (const path of JSON.parse(process.env.SOCKETS)) out[path] = await attempt(() => connect({ path }));
        out.sockets = await attempt(() => fs.readdirSync('/run/slipway').sort().join(','));
        out.agent = await new Promise((resolve) => {
          http.get({ socketPath: '/run/slipway/agent.sock', path: '/status' }, (r) => { r.resume(); resolve(r.statusCode); })
            .on('error', (e) => resolve(e.code));
        });
        out.source = await new Promise((resolve) => {
          http.get({ socketPath: '/run/slipway/sources.sock', path: '/internal/sources/x.v1.' + '0'.repeat(32) + '.tar.gz' }, (r) => { r.resume(); resolve(r.statusCode); })
            .on('error', (e) => resolve(e.code));
        });
        return out;`),
      {
        env: [
          {
            name: 'SOCKETS',
            value: JSON.stringify([
              join(other.dir, 'app.sock'),
              `/run/slipway/../${other.id}/app.sock`,
              `/run/${other.id}/app.sock`,
            ]),
          },
        ],
      },
    );
    expect((await request(other, '/')).body).toBe('other app');
    const r = await report<Record<string, unknown>>(sandbox);
    expect(r[join(other.dir, 'app.sock')]).toBe('error: ENOENT');
    expect(r[`/run/slipway/../${other.id}/app.sock`]).toBe('error: ENOENT');
    expect(r[`/run/${other.id}/app.sock`]).toBe('error: ENOENT');
    // Root-owned and searchable only once booted (when we run as root): the app sees no listing.
    expect(r.sockets).toBe(
      process.getuid?.() === 0
        ? 'error: EACCES'
        : 'ok: agent.sock,app.sock,egress.sock,sources.sock',
    );
    expect(r.agent).toBe(401);
    expect(r.source).toBe(401);
    await t.runtime.reap(sandbox);
    await t.runtime.reap(other);
  });

  it('reaches the outside only through the egress gate, with the hosts the app is allowed', async () => {
    const egressProbe = probeApp(`
      // Plain HTTP through the proxy: an absolute URI to 127.0.0.1:3128, as HTTP_PROXY says.
      return await new Promise((resolve) => {
        const proxy = new URL(process.env.HTTP_PROXY);
        const req = http.get({ host: proxy.hostname, port: Number(proxy.port), path: process.env.TARGET, headers: { host: new URL(process.env.TARGET).host } }, (r) => {
          let body = ''; r.on('data', (d) => (body += d)); r.on('end', () => resolve({ status: r.statusCode, body }));
        });
        req.on('error', (e) => resolve({ error: e.code || e.message }));
      });`);
    const target = `http://127.0.0.1:${hostPort}/`;
    const denied = await deploy(t, 'node', egressProbe, {
      env: [{ name: 'TARGET', value: target }],
    });
    const refused = await report<{ status: number; body: string }>(denied);
    expect(refused.status).toBe(403);
    expect(refused.body).toContain('not in egress.allowed_hosts');
    await t.runtime.reap(denied);

    const allowed = await deploy(t, 'node', egressProbe, {
      env: [{ name: 'TARGET', value: target }],
      // A port other than 80/443 must be named: the bare address would allow those two only.
      allowedHosts: [`127.0.0.1:${hostPort}`],
    });
    expect(await report(allowed)).toEqual({ status: 200, body: 'host says hi' });
    await t.runtime.reap(allowed);
  });
});

describe('limits', () => {
  it('enforces the memory limit (the app is killed) or says why it cannot', async () => {
    const status = t.runtime.status();
    if (!status.limits.enforced) {
      expect(status.limits.detail).toMatch(/^memory and pid limits are not enforced: .+/);
      return;
    }
    expect(status.limits.detail).toContain('160 MB memory and 64 pids');
    const sandbox = await claimOnly(t, 'node');
    const exits: AppExit[] = [];
    sandbox.onExit((exit) => exits.push(exit));
    await inject(
      t,
      sandbox,
      'node',
      probeApp(
        `const keep = []; for (let i = 0; i < 40; i++) keep.push(Buffer.alloc(10 * 1024 * 1024, 1)); return keep.length;`,
      ),
    );
    // The connection dies with the app: only the kill matters here.
    await request(sandbox, '/').catch((err: unknown) => err);
    await eventually(() => exits.length === 1, 'the OOM kill');
    expect(exits[0]?.signal).toBe('SIGKILL');
  });

  it('enforces the pid limit (threads run out below it) or says why it cannot', async () => {
    const status = t.runtime.status();
    if (!status.limits.enforced) {
      expect(status.limits.detail).toMatch(/^memory and pid limits are not enforced: .+/);
      return;
    }
    const sandbox = await deploy(t, 'python', {
      'main.py': `import http.server, json, os, threading
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        started, error, stop = 0, None, threading.Event()
        try:
            for _ in range(500):
                threading.Thread(target=stop.wait, daemon=True).start()
                started += 1
        except RuntimeError as e:
            error = str(e)
        stop.set()
        body = json.dumps({'started': started, 'error': error}).encode()
        self.send_response(200); self.end_headers(); self.wfile.write(body)
http.server.HTTPServer(('127.0.0.1', int(os.environ['PORT'])), H).serve_forever()
`,
    });
    const r = await report<{ started: number; error: string | null }>(sandbox);
    expect(r.error).toMatch(/can't start new thread/);
    expect(r.started).toBeGreaterThan(10);
    expect(r.started).toBeLessThan(64);
    await t.runtime.reap(sandbox);
  });
});
