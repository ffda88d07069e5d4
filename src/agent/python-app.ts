import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';
import { diag, info } from './diag.js';
import { ring } from './log-ring.js';
import { APP_DIR, EXIT_LINES, type ExitReport } from './protocol.js';

/**
 * Pre-started at boot: imports what a small web app's first lines import, says `R<major.minor>` on
 * fd 3, then waits for one JSON line on stdin and runs the entrypoint as `python3 <entry>` would
 * (argv, sys.path[0], cwd, env) via runpy, or a server module (`python -m gunicorn app:app`) with
 * the entrypoint's directory first on sys.path. Interpreter start-up is paid before the deploy, not
 * during it. PYTHONPATH was read at start-up, before the app existed: its `path` entries go into
 * sys.path where PYTHONPATH would have put them (after the script's dir), with their .pth files.
 */
const BOOTSTRAP = `
import os, sys, json, runpy, site
import socket, threading, http.server, socketserver, urllib.parse, urllib.request, wsgiref.simple_server
import pkgutil
# A rehearsal: runpy's first run and the first name lookup (NSS) each cost milliseconds.
warm = '/tmp/.slipway-warm.py'
with open(warm, 'w') as f:
    f.write('pass\\n')
runpy.run_path(warm, run_name='__warm__')
os.remove(warm)
socket.getfqdn('127.0.0.1')
del warm, f
os.write(3, ('R%d.%d' % sys.version_info[:2]).encode())
line = sys.stdin.readline()
if not line:
    sys.exit(0)
cmd = json.loads(line)
os.close(3)
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0)
os.close(null)
os.environ.clear()
os.environ.update(cmd['env'])
os.chdir(cmd['cwd'])
entry = cmd['entry']
module = cmd.get('module')
sys.argv = cmd['argv'] if module else [entry]
sys.path[0] = os.path.dirname(entry)
sys.path[1:1] = cmd['path']
[site.addsitedir(p) for p in cmd['path']]
del os, sys, json, null, line, cmd, site
if module:
    runpy.run_module(module, run_name='__main__', alter_sys=True)
else:
    runpy.run_path(entry, run_name='__main__')
`;

const OUTPUT_DRAIN_MS = 200;

export class PythonApp {
  exit: ExitReport | undefined;
  /** `3.11`: the interpreter's version, as PEP 582's `__pypackages__/<version>/lib` names it. */
  version: string | undefined;
  private readonly exitListeners: ((exit: ExitReport) => void)[] = [];

  private constructor(private readonly child: ChildProcess) {
    child.on('exit', (code, signal) => {
      // 'close' waits for the output pipes, which a process the app left behind may hold open:
      // take the last lines when they are drained, or shortly after the exit at most.
      const report = () => this.report(code, signal);
      child.once('close', report);
      setTimeout(report, OUTPUT_DRAIN_MS).unref();
    });
  }

  private report(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exit) return;
    ring.flush();
    this.exit = { code, signal, lastLines: ring.last(EXIT_LINES).map((l) => l.text) };
    diag({ t: 'exit', ...this.exit });
    for (const listener of this.exitListeners.splice(0)) listener(this.exit);
  }

  /** Starts the interpreter and resolves once it has warmed up and waits for its command. */
  static boot(python: string): Promise<PythonApp> {
    const child = spawn(python, ['-u', '-s', '-c', BOOTSTRAP], {
      cwd: APP_DIR,
      env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/tmp', LANG: 'C.UTF-8' },
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    });
    const app = new PythonApp(child);
    // The app's output is our output: the host reads fds 1/2, the tap keeps the ring.
    (child.stdout as Readable).on('data', (chunk: Buffer) => process.stdout.write(chunk));
    (child.stderr as Readable).on('data', (chunk: Buffer) => process.stderr.write(chunk));
    const control = child.stdio[3] as Readable;
    return new Promise((resolve, reject) => {
      control.once('data', (chunk: Buffer) => {
        app.version = /^R(\d+\.\d+)/.exec(chunk.toString('latin1'))?.[1];
        info('python warm', { pid: child.pid, version: app.version });
        resolve(app);
      });
      child.once('error', reject);
      child.once('close', (code, signal) =>
        reject(new Error(`python exited during boot (code ${code}, signal ${signal})`)),
      );
    });
  }

  /** The interpreter's pid: an install step's leftovers are killed, this one is kept. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  onExit(listener: (exit: ExitReport) => void): void {
    if (this.exit) listener(this.exit);
    else this.exitListeners.push(listener);
  }

  /** `path`: directories to import from, as PYTHONPATH entries would be. */
  start(
    entry: string,
    env: Record<string, string>,
    path: string[] = [],
    server?: { module: string; argv: string[] },
  ): void {
    const stdin = this.child.stdin;
    if (!stdin) throw new Error('python has no stdin');
    const run = server ? { module: server.module, argv: server.argv } : {};
    stdin.end(`${JSON.stringify({ entry, env, cwd: APP_DIR, path, ...run })}\n`);
  }

  /** Passes a stop request on: the agent's own SIGTERM would not reach its child. */
  kill(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }
}
