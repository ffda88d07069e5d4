import { placement } from './placement.js';

/** What every app process starts from; the sandbox has nothing else worth inheriting. */
const BASE: Record<string, string> = {
  PATH: '/usr/local/bin:/usr/bin:/bin',
  HOME: '/tmp',
  LANG: 'C.UTF-8',
};

/**
 * The app's environment: the base, then the deploy's env items, then what the platform owns (the
 * port the bridge dials and the egress proxy), which an item cannot override. The agent's own
 * variables and token never appear: the env is built from scratch, not copied from the agent's.
 */
export function appEnv(items: { name: string; value: string }[]): Record<string, string> {
  const env: Record<string, string> = { ...BASE };
  for (const item of items) {
    if (!validName(item.name) || typeof item.value !== 'string' || item.value.includes('\0')) {
      continue;
    }
    if (item.name.toUpperCase().startsWith('SLIPWAY_')) continue;
    env[item.name] = item.value;
  }
  const PROXY = `http://127.0.0.1:${placement.proxyPort}`;
  Object.assign(env, {
    PORT: String(placement.appPort),
    HTTP_PROXY: PROXY,
    HTTPS_PROXY: PROXY,
    http_proxy: PROXY,
    https_proxy: PROXY,
    NO_PROXY: 'localhost,127.0.0.1',
    no_proxy: 'localhost,127.0.0.1',
  });
  return env;
}

/** Names that execve can carry: no `=`, no NUL, not empty. */
export function validName(name: unknown): name is string {
  return typeof name === 'string' && name !== '' && !/[=\0]/.test(name);
}

/** Replaces process.env in place: a node app runs in this process and reads it from there. */
export function replaceProcessEnv(env: Record<string, string>): void {
  for (const key of Object.keys(process.env)) delete process.env[key];
  Object.assign(process.env, env);
}
