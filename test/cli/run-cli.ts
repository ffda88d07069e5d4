import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { startTestServer, type TestServer } from '../support/server.js';

/** The real entry point, as `npx slipway` and the package's `bin` run it. */
export const BIN = resolve(import.meta.dirname, '../../bin/slipway.mjs');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  /** SLIPWAY_URL, SLIPWAY_TOKEN, XDG_CONFIG_HOME, ...; undefined removes a variable. */
  env?: Record<string, string | undefined>;
  cwd?: string;
  input?: string;
}

/**
 * Runs `node bin/slipway.mjs ...args` as a child process (never spawnSync: the server under test
 * runs in this process and must keep answering). HOME and XDG_CONFIG_HOME point at a fresh temp
 * dir unless given, so no test reads or writes a real login.
 */
export function runCli(args: string[], opts: CliOptions = {}): Promise<CliRun> {
  const home = mkdtempSync(join(tmpdir(), 'slipway-cli-home-'));
  const env: Record<string, string> = {};
  const merged = {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    ...opts.env,
  };
  for (const [key, value] of Object.entries(merged)) if (value !== undefined) env[key] = value;
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: opts.cwd, env });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      rmSync(home, { recursive: true, force: true });
      resolvePromise({ code, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}

/** Starts the CLI and leaves it running (logs -f); the caller kills it. */
export function startCli(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env } });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  return {
    child,
    get stdout() {
      return stdout;
    },
    /** Resolves once stdout holds `text`; rejects after `timeoutMs`. */
    async waitFor(text: string, timeoutMs = 15_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (!stdout.includes(text)) {
        if (Date.now() > deadline) throw new Error(`never printed ${text}; stdout: ${stdout}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
}

const folders: string[] = [];

/** Writes `files` (relative path → content) into a fresh temp folder named `name`. */
export function folderWith(name: string, files: Record<string, string>): string {
  const parent = mkdtempSync(join(tmpdir(), 'slipway-cli-src-'));
  folders.push(parent);
  const root = join(parent, name);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  return root;
}

/** A node app answering `<label>` on `/`, printing `/log?msg=x` lines, and reading `/file?p=`. */
export function appFiles(label: string): Record<string, string> {
  return {
    'package.json': JSON.stringify({ name: 'cli-app', main: 'server.js' }),
    'server.js': `
const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');
http.createServer((req, res) => {
  const url = new URL(req.url, 'http://app');
  if (url.pathname === '/log') console.log(url.searchParams.get('msg'));
  if (url.pathname === '/file') {
    const file = path.join(__dirname, url.searchParams.get('p'));
    if (!fs.existsSync(file)) { res.statusCode = 404; res.end('missing\\n'); return; }
    res.end(fs.readFileSync(file));
    return;
  }
  if (url.pathname === '/env') { res.end(String(process.env.GREETING)); return; }
  res.end('${label}\\n');
}).listen(process.env.PORT);
`,
  };
}

/** Removes the folders folderWith made (call in afterAll). */
export function removeFolders(): void {
  for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/**
 * The real server with one API key (and a warm sandbox), and the environment that points the CLI
 * at it, as CI would set it.
 */
export async function startCliServer(
  key: string,
): Promise<{ server: TestServer; env: Record<string, string> }> {
  const server = await startTestServer({
    auth: { apiKeys: [{ key, name: 'dev' }] },
    runtime: { poolSize: 1 },
  });
  return { server, env: { SLIPWAY_URL: server.baseURL, SLIPWAY_TOKEN: key } };
}
