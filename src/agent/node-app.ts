import { existsSync, readFileSync } from 'node:fs';
import Module from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { replaceProcessEnv } from './app-env.js';
import { trackAppServers } from './app-servers.js';
import { diag, errorText, warn } from './diag.js';
import { ring } from './log-ring.js';
import { APP_DIR, EXIT_LINES, type ExitReport } from './protocol.js';

/** Module._load with isMain: how `node file.js` itself loads a CommonJS main (pm2 does the same). */
type LoadMain = (request: string, parent: null, isMain: boolean) => unknown;

/**
 * Runs a node app inside this warm process, as `node <entry>` would: its env, argv and cwd, and
 * `require.main === module` for CommonJS. No process is spawned, so the deploy pays only for the
 * app's own module loading. The agent's servers are unref'd once the app is loaded, so when the
 * app has nothing left to do the loop drains, 'beforeExit' fires, and that is the app's exit.
 */
export class NodeApp {
  exit: ExitReport | undefined;
  private loading = false;
  private readonly exitListeners: ((exit: ExitReport) => void)[] = [];

  constructor(private readonly releaseLoop: () => void) {
    process.on('exit', (code) => this.report(code, null));
    // Like node: a top-level await that never settled exits 13, anything else the exit code.
    process.on('beforeExit', () => this.finish(this.loading ? 13 : Number(process.exitCode ?? 0)));
  }

  onExit(listener: (exit: ExitReport) => void): void {
    if (this.exit) listener(this.exit);
    else this.exitListeners.push(listener);
  }

  /** Loads the entrypoint; a throw at load time is the app's crash, reported like node does. */
  async start(entry: string, env: Record<string, string>): Promise<void> {
    replaceProcessEnv(env);
    trackAppServers();
    process.argv = [process.argv[0] ?? process.execPath, entry];
    process.chdir(APP_DIR);
    this.releaseLoop();
    this.loading = true;
    try {
      if (isEsm(entry)) await import(pathToFileURL(entry).href);
      else (Module as unknown as { _load: LoadMain })._load(entry, null, true);
    } catch (err) {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.stderr.write(`\nNode.js ${process.version}\n`);
      process.exitCode = 1;
      this.finish(1);
    } finally {
      this.loading = false;
    }
  }

  /** The app is done while this process lives on: listeners answer, then exit for it. */
  private finish(code: number): void {
    this.report(code, null);
    const exit = this.exit;
    if (exit) for (const listener of this.exitListeners.splice(0)) listener(exit);
  }

  /** Records the exit once and tells the host on the diagnostics channel. */
  private report(code: number | null, signal: string | null): void {
    if (this.exit) return;
    ring.flush();
    this.exit = { code, signal, lastLines: ring.last(EXIT_LINES).map((l) => l.text) };
    diag({ t: 'exit', ...this.exit });
  }
}

/** The module system node itself would pick for this file. */
function isEsm(entry: string): boolean {
  if (entry.endsWith('.mjs')) return true;
  if (entry.endsWith('.cjs') || !entry.endsWith('.js')) return false;
  for (let dir = dirname(entry); dir.startsWith(APP_DIR); dir = dirname(dir)) {
    const pkg = join(dir, 'package.json');
    if (!existsSync(pkg)) continue;
    try {
      return (JSON.parse(readFileSync(pkg, 'utf8')) as { type?: unknown }).type === 'module';
    } catch (err) {
      warn('unreadable package.json, loading the entrypoint as CommonJS', {
        path: pkg,
        error: errorText(err),
      });
      return false;
    }
  }
  return false;
}
