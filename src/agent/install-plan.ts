import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { appEnv } from './app-env.js';
import { errorText } from './diag.js';
import type { InstallStep } from './install-step.js';
import {
  APP_DIR,
  PIP_TARGET,
  type CaBundle,
  type InstallRequest,
  type NpmInstall,
  type PipInstall,
} from './protocol.js';
import { BadSourceError } from './unpack.js';

/** npm's cache: on the sandbox's tmpfs (memory), so it is removed once the install is done. */
export const NPM_CACHE = '/tmp/.npm';

/**
 * The install steps for what is in /app, following docs/classifier.md: `npm ci` with a lockfile,
 * else `npm install`; dev dependencies only when a `build` script needs them (and then kept, as
 * the build may leave code that requires them), then `npm run build`, or runtime.build in its
 * place. Empty when there is nothing to install; `builds` (a static site) runs npm only when there
 * is a build. Without a package.json, runtime.build is the only step.
 */
export function nodeSteps(
  req: InstallRequest,
  npm: NpmInstall,
  only: 'all' | 'builds' = 'all',
): InstallStep[] {
  const manifest = join(APP_DIR, 'package.json');
  if (!existsSync(manifest))
    return req.build === undefined ? [] : [buildStep(req.build, installEnv(req))];
  let scripts: unknown;
  try {
    scripts = (JSON.parse(readFileSync(manifest, 'utf8')) as { scripts?: unknown }).scripts;
  } catch (err) {
    throw new BadSourceError(`package.json is not valid JSON: ${errorText(err)}`);
  }
  const build =
    req.build !== undefined ||
    (typeof scripts === 'object' &&
      scripts !== null &&
      typeof (scripts as Record<string, unknown>).build === 'string');
  // A static site's package.json without a build describes tooling, not the site: nothing to do.
  if (!build && only === 'builds') return [];
  const locked = ['package-lock.json', 'npm-shrinkwrap.json'].some((f) =>
    existsSync(join(APP_DIR, f)),
  );
  const verb = locked ? 'ci' : 'install';
  const flags = ['--no-audit', '--no-fund', build ? '--include=dev' : '--omit=dev'];
  const env = installEnv(req);
  Object.assign(env, {
    npm_config_cache: NPM_CACHE,
    npm_config_update_notifier: 'false',
    npm_config_progress: 'false',
    // No debug log file: it would sit in the cache we remove, and npm's pointer to it misleads.
    npm_config_logs_max: '0',
    npm_config_registry: npm.registry,
    // npm reads these before HTTP(S)_PROXY; set both so no npmrc in the source can route around.
    npm_config_proxy: env.HTTP_PROXY,
    npm_config_https_proxy: env.HTTPS_PROXY,
    npm_config_noproxy: '',
  });
  for (const [key, url] of Object.entries(npm.scoped)) env[`npm_config_${key}`] = url;
  const cafile = caFile(npm, 'npm');
  if (cafile) env.npm_config_cafile = cafile;
  const npmStep = (args: string[]): InstallStep => ({
    command: `npm ${args.filter((a) => !a.startsWith('-')).join(' ')}`,
    display: `npm ${args.join(' ')}`,
    file: process.execPath,
    args: [npm.cli, ...args],
    env,
  });
  if (!build) return [npmStep([verb, ...flags])];
  const last =
    req.build === undefined
      ? { ...npmStep(['run', 'build']), builds: true as const }
      : buildStep(req.build, env);
  return [npmStep([verb, ...flags]), last];
}

/**
 * runtime.build, as the user typed it, run by `sh -c` in /app with the install's env: it fails,
 * times out and is tagged in the log exactly as `npm run build` would be.
 */
function buildStep(command: string, env: Record<string, string>): InstallStep {
  return { command, display: command, file: '/bin/sh', args: ['-c', command], env, builds: true };
}

/** `pip install --target` into PIP_TARGET from requirements.txt, else the pyproject.toml project. */
export function pythonSteps(req: InstallRequest, pip: PipInstall, python: string): InstallStep[] {
  const what = existsSync(join(APP_DIR, 'requirements.txt'))
    ? ['-r', 'requirements.txt']
    : existsSync(join(APP_DIR, 'pyproject.toml'))
      ? ['.']
      : undefined;
  const build = req.build === undefined ? [] : [buildStep(req.build, pythonBuildEnv(req))];
  if (!what) return build;
  const args = [
    'install',
    '--no-input',
    '--disable-pip-version-check',
    '--no-cache-dir',
    '--progress-bar',
    'off',
    '--target',
    PIP_TARGET,
    ...what,
  ];
  const env = installEnv(req);
  // Only what the host configured: no pip.conf in the sandbox may add indexes of its own. The
  // index goes by env, not argv: index URLs often carry credentials, and argv is logged.
  Object.assign(env, {
    PIP_CONFIG_FILE: '/dev/null',
    PIP_INDEX_URL: pip.index,
    PYTHONNOUSERSITE: '1',
  });
  const cafile = caFile(pip, 'pip');
  if (cafile) env.PIP_CERT = cafile;
  return [
    {
      command: 'pip install',
      display: `pip ${args.join(' ')}`,
      file: python,
      args: ['-m', 'pip', ...args],
      env,
    },
    ...build,
  ];
}

/** `manage.py collectstatic` imports what pip just installed: PIP_TARGET goes on its path. */
function pythonBuildEnv(req: InstallRequest): Record<string, string> {
  const env = installEnv(req);
  env.PYTHONPATH = [PIP_TARGET, env.PYTHONPATH ?? ''].filter(Boolean).join(':');
  env.PYTHONNOUSERSITE = '1';
  return env;
}

/**
 * The app's env (its items, the egress proxy) with nothing bypassing the proxy: an index on the
 * host's loopback must still go through the gate, which alone can reach it.
 */
function installEnv(req: InstallRequest): Record<string, string> {
  const env = appEnv(Array.isArray(req.env) ? req.env : []);
  delete env.NO_PROXY;
  delete env.no_proxy;
  env.HOME = '/tmp';
  return env;
}

/** A CA bundle the host passed as contents is written to /tmp for the tool to read. */
function caFile(bundle: CaBundle, tool: string): string | undefined {
  if (bundle.cafile) return bundle.cafile;
  if (!bundle.ca) return undefined;
  const dir = '/tmp/.slipway';
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, `${tool}-ca.pem`);
  writeFileSync(path, bundle.ca, { mode: 0o600 });
  return path;
}
