import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { CliError, EXIT } from './errors.js';

/** What `slipway login` saves. */
export interface StoredLogin {
  url: string;
  token: string;
}

/** The server and key a command talks to, and where the key came from (for the hint on a 401). */
export interface Credentials {
  url: string;
  token?: string;
  from: 'env' | 'file';
}

/** `$XDG_CONFIG_HOME/slipway/config.json`, else `~/.config/slipway/config.json`. */
export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  // The XDG spec says a relative value is invalid and must be ignored.
  const xdg = env.XDG_CONFIG_HOME;
  const base = xdg && isAbsolute(xdg) ? xdg : join(homedir(), '.config');
  return join(base, 'slipway', 'config.json');
}

export async function readLogin(path = configPath()): Promise<StoredLogin | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new CliError(
      EXIT.auth,
      'config_unreadable',
      `cannot read ${path}: ${(err as Error).message}`,
      'make the file readable to you, or set SLIPWAY_URL and SLIPWAY_TOKEN',
    );
  }
  let parsed: Partial<StoredLogin>;
  try {
    parsed = JSON.parse(text) as Partial<StoredLogin>;
  } catch (err) {
    throw new CliError(
      EXIT.auth,
      'config_invalid',
      `${path} is not valid JSON: ${(err as Error).message}`,
      'run slipway login to write it again',
    );
  }
  if (typeof parsed.url !== 'string' || typeof parsed.token !== 'string') {
    throw new CliError(
      EXIT.auth,
      'config_invalid',
      `${path} lacks url or token`,
      'run slipway login',
    );
  }
  return { url: parsed.url, token: parsed.token };
}

/** Writes the login readable by the user only: the key is as good as a password. */
export async function saveLogin(login: StoredLogin, path = configPath()): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // mkdir leaves an existing dir's mode alone, and the umask may have widened a new one.
  await chmod(dir, 0o700);
  const temp = `${path}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(login, null, 2)}\n`, { mode: 0o600 });
  await chmod(temp, 0o600);
  // A rename never leaves a half-written file where the next command reads it.
  await rename(temp, path);
}

/** Removes the saved login; false when there was none. */
export async function removeLogin(path = configPath()): Promise<boolean> {
  try {
    await rm(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** `SLIPWAY_URL`/`SLIPWAY_TOKEN` win over the saved login, so CI needs no config file. */
export async function resolveCredentials(
  env: NodeJS.ProcessEnv = process.env,
): Promise<Credentials> {
  const envUrl = env.SLIPWAY_URL?.trim();
  const envToken = env.SLIPWAY_TOKEN?.trim();
  const stored = envUrl && envToken ? undefined : await readLogin(configPath(env));
  const url = envUrl || stored?.url;
  if (!url) {
    throw new CliError(
      EXIT.auth,
      'not_logged_in',
      'no server configured',
      'run slipway login, or set SLIPWAY_URL and SLIPWAY_TOKEN',
    );
  }
  const token = envToken || stored?.token;
  return {
    url: trimSlash(url),
    ...(token ? { token } : {}),
    from: envToken ? 'env' : 'file',
  };
}

export function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}
