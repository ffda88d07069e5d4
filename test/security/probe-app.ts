import { tarGz } from '../support/tarball.js';

/**
 * A node app for the attack tests: each path runs one probe inside its sandbox and answers what it
 * got as JSON. Every probe reports that it tried (counts, codes), so a broken probe cannot pass
 * for a refused attack.
 */
export function probeApp(): Promise<Buffer> {
  return tarGz({ 'package.json': '{"main":"server.js"}', 'server.js': SERVER });
}

const SERVER = String.raw`
const fs = require('node:fs');
const net = require('node:net');
const http = require('node:http');
const { spawnSync } = require('node:child_process');
const { Worker } = require('node:worker_threads');

const attempt = (fn) => { try { return 'ok: ' + String(fn()).slice(0, 200); } catch (e) { return 'error: ' + (e.code || e.message); } };
const pids = () => fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n));
const run = (file, args) => { const r = spawnSync(file, args, { encoding: 'utf8', timeout: 5000 }); return { status: r.status, error: r.error && r.error.code, stdout: (r.stdout || '').slice(0, 2000), stderr: (r.stderr || '').slice(0, 300) }; };

const probes = {
  // Every environment and command line this sandbox can see.
  environ: () => {
    const seen = {};
    for (const pid of pids()) {
      for (const file of ['environ', 'cmdline']) {
        try { seen[pid + '/' + file] = fs.readFileSync('/proc/' + pid + '/' + file, 'latin1'); } catch (e) { seen[pid + '/' + file] = 'unreadable: ' + e.code; }
      }
    }
    return seen;
  },
  // Marks this process, so the host can find it and read its host uid.
  mark: (q) => { process.title = q.get('marker'); return { pid: process.pid, uid: process.getuid(), uidMap: fs.readFileSync('/proc/self/uid_map', 'utf8').trim() }; },
  sysctl: () => ({
    corePattern: attempt(() => fs.writeFileSync('/proc/sys/kernel/core_pattern', '|/tmp/evil')),
    dropCaches: attempt(() => fs.writeFileSync('/proc/sys/vm/drop_caches', '3')),
    hostname: attempt(() => fs.writeFileSync('/proc/sys/kernel/hostname', 'evil')),
  }),
  // Points app.sock at a host socket, every way there is.
  hijack: (q) => {
    const target = q.get('target');
    return {
      unlink: attempt(() => fs.unlinkSync('/run/slipway/app.sock')),
      rename: attempt(() => fs.renameSync('/run/slipway/app.sock', '/run/slipway/old.sock')),
      symlink: attempt(() => fs.symlinkSync(target, '/run/slipway/app.sock')),
      chmod: attempt(() => fs.chmodSync('/run/slipway', 0o777)),
      stillThere: attempt(() => fs.lstatSync('/run/slipway/app.sock').isSocket()),
    };
  },
  // Writes to every place that might be host disk or unbounded memory.
  writes: () => {
    const out = {};
    for (const dir of ['/', '/run', '/run/slipway', '/dev', '/opt', '/etc', '/usr', '/var', '/home', '/proc', '/app', '/tmp', '/dev/shm']) {
      out[dir] = attempt(() => { fs.writeFileSync(dir + '/probe-' + process.pid, 'x'); return 'written'; });
    }
    out.mounts = fs.readFileSync('/proc/self/mounts', 'utf8');
    return out;
  },
  namespaces: () => ({
    unshareUser: run('unshare', ['-U', 'true']),
    unshareUserRoot: run('unshare', ['-Ur', 'true']),
    unshareNet: run('unshare', ['-n', 'true']),
    unshareMount: run('unshare', ['-m', 'true']),
    mount: run('mount', ['-t', 'tmpfs', 'none', '/tmp']),
    // The same calls made directly, with what python's ctypes sees as errno.
    syscalls: run('python3', ['-c', process.env.SYSCALL_PROBE, process.env.SYSCALL_NUMBERS]),
    forkStillWorks: run('sh', ['-c', 'echo forked']),
  }),
  // Two threads spinning for a while: how much CPU did they get per second of wall time?
  spin: (q) => new Promise((resolve) => {
    const ms = Number(q.get('ms') || 2000);
    const code = 'const end = Date.now() + ' + ms + '; while (Date.now() < end) {}';
    const before = process.cpuUsage();
    const started = Date.now();
    let left = 2;
    for (let i = 0; i < 2; i++) {
      new Worker(code, { eval: true }).on('exit', () => {
        if (--left > 0) return;
        const used = process.cpuUsage(before);
        resolve({ cpuPerWallSecond: (used.user + used.system) / 1000 / (Date.now() - started) });
      });
    }
  }),
  // As many files as it can make, up to the count asked for: on the host's disk if it can.
  files: (q) => {
    const want = Number(q.get('count'));
    const dir = ['/run/slipway/many', '/tmp/many'].find((d) => { try { fs.mkdirSync(d); return true; } catch { return false; } });
    let made = 0;
    let error;
    for (; made < want; made++) {
      try { fs.writeFileSync(dir + '/' + made, ''); } catch (e) { error = e.code; break; }
    }
    return { dir, made, error };
  },
};

http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://x');
  const probe = probes[url.pathname.slice(1)];
  const body = probe ? await probe(url.searchParams) : { probes: Object.keys(probes) };
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(body));
}).listen(process.env.PORT);
`;

/** Run by python3 inside: calls each syscall by number and prints {name: errno}. */
export const SYSCALL_PROBE = String.raw`
import ctypes, json, sys
libc = ctypes.CDLL(None, use_errno=True)
out = {}
for name, nr in json.loads(sys.argv[1]).items():
    ctypes.set_errno(0)
    # Arguments that would do harm if the call went through are harmless here: the filter
    # answers before the kernel reads them. unshare gets CLONE_NEWUSER.
    arg = 0x10000000 if name == 'unshare' else 0
    rc = libc.syscall(nr, arg, 0, 0, 0, 0)
    out[name] = {'rc': rc, 'errno': ctypes.get_errno()}
print(json.dumps(out))
`;
