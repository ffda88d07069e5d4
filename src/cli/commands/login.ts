import type { Command } from 'commander';
import { ApiClient } from '../api-client.js';
import { configPath, readLogin, removeLogin, saveLogin, trimSlash } from '../credentials.js';
import { contextOf } from '../context.js';
import { CliError, EXIT, usageError } from '../errors.js';
import { readSecret } from '../secret-prompt.js';
import { readStdin } from '../stdin.js';

const DEFAULT_URL = 'http://127.0.0.1:8080';

/** GET /api/whoami (api/openapi.yaml); fields the CLI shows. */
interface Whoami {
  user_id: string;
  role: string;
}

export function loginCommands(program: Command): void {
  program
    .command('login')
    .description('check a server URL and API key, and save them for the next commands')
    .option('--url <url>', `the server (default: SLIPWAY_URL, the saved one, or ${DEFAULT_URL})`)
    .option('--token <key>', 'the API key (default: SLIPWAY_TOKEN, or asked for on a terminal)')
    .option('--token-stdin', 'read the API key from stdin (keeps it out of shell history)')
    .action(async (opts: { url?: string; token?: string; tokenStdin?: boolean }, cmd: Command) => {
      const { out } = contextOf(cmd);
      const path = configPath();
      const url = trimSlash(
        opts.url ?? process.env.SLIPWAY_URL ?? (await readLogin(path))?.url ?? DEFAULT_URL,
      );
      if (!/^https?:\/\/[^/]+/.test(url)) throw usageError(`--url ${url} is not an http(s) URL`);
      const token = (await tokenFrom(opts)).trim();
      if (token === '') throw usageError('the API key is empty');

      // Saved only once the server takes it: a typo fails here, not on the next deploy.
      const api = new ApiClient({ url, token, from: 'file' });
      const me = await api.call<Whoami>('GET', '/api/whoami').catch((err: unknown) => {
        if (!(err instanceof CliError)) throw err;
        if (err.exitCode === EXIT.auth) {
          throw new CliError(
            err.exitCode,
            err.code,
            err.message,
            'check the key; nothing was saved',
          );
        }
        if (['not_found', 'http_404', 'not_json'].includes(err.code)) throw noApiAt(url);
        throw err;
      });
      await saveLogin({ url, token }, path);
      out.result({ url, user_id: me.user_id, role: me.role, config: path }, [
        `logged in to ${url} as ${me.user_id}`,
        `saved to ${path}`,
      ]);
    });

  program
    .command('logout')
    .description('forget the saved server and key')
    .action(async (_opts: unknown, cmd: Command) => {
      const { out } = contextOf(cmd);
      const path = configPath();
      const removed = await removeLogin(path);
      const human = [removed ? `removed ${path}` : 'not logged in'];
      if (process.env.SLIPWAY_TOKEN) human.push('SLIPWAY_TOKEN is still set and still used');
      out.result({ removed, config: path }, human);
    });
}

/**
 * The server answered, but not with an identity: most often a URL with an API path (`…/v1`) where
 * the server's own address belongs, since the CLI adds the paths itself.
 */
function noApiAt(url: string): CliError {
  const { origin, pathname } = new URL(url);
  const hint =
    pathname !== '/'
      ? `give the server's address without ${pathname}: slipway login --url ${origin}`
      : "check --url: it is the address the server's dashboard opens at";
  return new CliError(EXIT.api, 'not_found', `no Slipway API at ${url}; nothing was saved`, hint);
}

async function tokenFrom(opts: { token?: string; tokenStdin?: boolean }): Promise<string> {
  if (opts.token !== undefined) return opts.token;
  if (opts.tokenStdin) return readStdin();
  if (process.env.SLIPWAY_TOKEN) return process.env.SLIPWAY_TOKEN;
  if (!process.stdin.isTTY)
    throw usageError('no API key given', 'pass --token, --token-stdin or set SLIPWAY_TOKEN');
  return readSecret('API key: ');
}
