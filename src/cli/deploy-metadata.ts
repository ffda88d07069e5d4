import { readFile } from 'node:fs/promises';
import { parseEnv } from 'node:util';
import { APP_NAME, APP_NAME_MAX } from '../sources/app-name.js';
import { usageError } from './errors.js';
import { checkMetadata, type EnvOrigin } from './local-checks.js';

/** `My_App v2` → `my-app-v2`; undefined when nothing usable is left (then --name is needed). */
export function nameFromFolder(folder: string): string | undefined {
  const slug = folder
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, APP_NAME_MAX)
    .replace(/-+$/, '');
  return APP_NAME.test(slug) ? slug : undefined;
}

export interface DeployFlags {
  name?: string;
  env: string[];
  envFile?: string;
  egress: string[];
  ttl?: string;
  access?: string;
}

/**
 * The `metadata` part of a deploy, checked by the server's rules before anything is packed (see
 * local-checks.ts). `access` is sent only when asked for, so a server without it deploys as before.
 */
export async function buildMetadata(
  name: string,
  flags: DeployFlags,
): Promise<Record<string, unknown>> {
  const env = new Map<string, { value: string; origin: EnvOrigin }>();
  if (flags.envFile) {
    const origin = `--env-file ${flags.envFile}`;
    for (const [key, value] of Object.entries(parseEnv(await readEnvFile(flags.envFile)))) {
      if (value !== undefined) env.set(key, { value, origin });
    }
  }
  // --env after --env-file: the command line overrides the file.
  for (const pair of flags.env) {
    const eq = pair.indexOf('=');
    if (eq < 0) throw usageError(`--env ${pair} is not KEY=VALUE`, 'pass --env NAME=value');
    // What follows `=` may be a secret: not repeated.
    if (eq === 0) throw usageError('an --env has no name before =', 'pass --env NAME=value');
    env.set(pair.slice(0, eq), { value: pair.slice(eq + 1), origin: '--env' });
  }
  checkMetadata({
    name,
    env,
    egress: flags.egress,
    ...(flags.ttl !== undefined ? { ttl: flags.ttl } : {}),
  });
  return {
    name,
    ...(env.size > 0 ? { env: [...env].map(([key, { value }]) => ({ name: key, value })) } : {}),
    ...(flags.egress.length > 0 ? { egress: { allowed_hosts: flags.egress } } : {}),
    ...(flags.ttl !== undefined ? { ttl: flags.ttl } : {}),
    ...(flags.access !== undefined ? { access: flags.access } : {}),
  };
}

async function readEnvFile(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw usageError(
      `cannot read --env-file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
}
