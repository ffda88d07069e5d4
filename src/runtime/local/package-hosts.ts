/**
 * The package indexes the general lane installs from: whatever the operator configured for the
 * host's own npm and pip, read once at runtime start. The only index named here is pip's own
 * default, PyPI, used as pip itself would when the host's pip has none configured; a host without
 * npm or pip has no general lane for that template, and says so.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import type { NpmInstall, PipInstall } from '../../agent/protocol.js';
import type { PackageIndex } from '../egress/egress-rules.js';

export interface PackageHosts {
  npm?: NpmInstall;
  pip?: PipInstall;
  /** Why a tool is missing, for the LaneUnavailable message. */
  missing: { npm?: string; pip?: string };
}

/**
 * The package indexes a config's URLs point at, for the egress gate: reachable during its install
 * only, on the index's own port only (the URL's, else the scheme's), not on whatever else listens
 * on that host, and only to be read.
 */
export function indexHosts(config: NpmInstall | PipInstall): PackageIndex[] {
  const urls =
    'cli' in config
      ? [config.registry, ...Object.values(config.scoped)]
      : [config.index, ...(config.files ?? [])];
  const indexes = new Map<string, PackageIndex>();
  for (const url of urls.map((u) => new URL(u))) {
    const index = { target: indexTarget(url), tls: url.protocol === 'https:' };
    indexes.set(`${index.target} ${index.tls}`, index);
  }
  return [...indexes.values()];
}

function indexTarget(url: URL): string {
  // URL drops a port that is the scheme's default, so an empty one means exactly that default.
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return `${url.hostname}:${port}`;
}

/** pip's own default index; its pages link the files on a second host, which installs need. */
const PYPI = { index: 'https://pypi.org/simple', files: ['https://files.pythonhosted.org/'] };

const READ_TIMEOUT_MS = 15_000;
/** Host paths bound into every sandbox read-only: a CA file under them is seen at the same path. */
const SANDBOX_VISIBLE = ['/usr/', '/etc/ssl/', '/etc/ca-certificates/'];

/** `visibleRoots`: host dirs bound at the same path (node's install dir when not under /usr). */
export async function readPackageHosts(
  node: string,
  python: string | undefined,
  visibleRoots: string[],
): Promise<PackageHosts> {
  const [npm, pip] = await Promise.all([
    readNpm(node, visibleRoots).catch((err: unknown) => reason(err)),
    python ? readPip(python).catch((err: unknown) => reason(err)) : 'no python3 under /usr',
  ]);
  const hosts: PackageHosts = { missing: {} };
  if (typeof npm === 'string') hosts.missing.npm = npm;
  else hosts.npm = npm;
  if (typeof pip === 'string') hosts.missing.pip = pip;
  else hosts.pip = pip;
  return hosts;
}

async function readNpm(node: string, visibleRoots: string[]): Promise<NpmInstall | string> {
  const cli = npmCli(node, [...SANDBOX_VISIBLE, ...visibleRoots.map((d) => `${d}/`)]);
  if (!cli) return `no npm next to ${node} or on PATH that sandboxes can see`;
  const out = await run(node, [cli, 'config', 'list', '--json']);
  const config = JSON.parse(out) as Record<string, unknown>;
  const registry = config.registry;
  if (!httpUrl(registry)) {
    return `the host's npm has no http(s) registry configured (${String(registry)})`;
  }
  const scoped: Record<string, string> = {};
  for (const [key, value] of Object.entries(config)) {
    if (/^@[^:]+:registry$/.test(key) && httpUrl(value)) scoped[key] = value;
  }
  const install: NpmInstall = { cli, registry, scoped };
  const cafile = config.cafile;
  if (typeof cafile === 'string' && cafile !== '') Object.assign(install, caOf(cafile));
  return install;
}

async function readPip(python: string): Promise<PipInstall | string> {
  const config: Record<string, string> = {};
  // `pip config list` prints `global.index-url='https://...'` lines; set keys only.
  for (const line of (await run(python, ['-m', 'pip', 'config', 'list'])).split('\n')) {
    const match = /^([\w.-]+)='(.*)'$/.exec(line.trim());
    if (match?.[1] !== undefined && match[2] !== undefined) config[match[1]] = match[2];
  }
  const configured =
    process.env.PIP_INDEX_URL || config['install.index-url'] || config['global.index-url'];
  // What pip itself would use: a host with pip and no index of its own installs from PyPI.
  const index = configured || PYPI.index;
  if (!httpUrl(index)) return `the host's pip index ${index} is not an http(s) URL`;
  const pip: PipInstall = configured ? { index } : { ...PYPI };
  const cert = process.env.PIP_CERT || config['install.cert'] || config['global.cert'];
  if (cert) Object.assign(pip, caOf(cert));
  return pip;
}

/** Only http(s) indexes: the sandbox reaches them through the egress gate, which speaks HTTP. */
function httpUrl(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  try {
    return ['http:', 'https:'].includes(new URL(value).protocol);
  } catch (err) {
    if (err instanceof TypeError) return false;
    throw err;
  }
}

/** An index URL fit for logs: no credentials, which index URLs often carry. */
export function shownUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
}

/** The CA bundle as a path the sandbox sees, or else its contents for the agent to write out. */
function caOf(path: string): { cafile: string } | { ca: string } {
  return SANDBOX_VISIBLE.some((dir) => path.startsWith(dir))
    ? { cafile: path }
    : { ca: readFileSync(path, 'utf8') };
}

/** The npm bundled with this node (`<prefix>/lib/node_modules/npm`), else the one on PATH. */
function npmCli(node: string, visible: string[]): string | undefined {
  const candidates = [join(dirname(dirname(node)), 'lib/node_modules/npm/bin/npm-cli.js')];
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const npm = join(dir, 'npm');
    if (dir !== '' && existsSync(npm)) candidates.push(realpathSync(npm));
  }
  return candidates.find(
    (c) => c.endsWith('npm-cli.js') && existsSync(c) && visible.some((d) => c.startsWith(d)),
  );
}

function run(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    // The host's own env and HOME: the operator's npmrc and pip.conf are the point.
    execFile(file, args, { timeout: READ_TIMEOUT_MS, env: process.env }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${[file, ...args].join(' ')}: ${stderr.trim() || err.message}`));
      else resolve(stdout);
    });
  });
}

function reason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
