import type { Command } from 'commander';
import { appPath } from '../api-client.js';
import { contextOf } from '../context.js';
import { usageError } from '../errors.js';
import { table } from '../output.js';
import { readSecret } from '../secret-prompt.js';
import { readStdin } from '../stdin.js';

/** A share link (api/openapi.yaml `ShareLink`). */
interface ShareLink {
  token: string;
  app_id: string;
  has_password: boolean;
  expires_at: string | null;
  created_at: string;
  url: string;
}

export function shareCommands(program: Command): void {
  const share = program
    .command('share')
    .description('public links to an app, optionally with a password');

  share
    .command('create')
    .description('create a share link')
    .argument('<app>', "the app's name")
    .option(
      '--password [password]',
      'require this password (asked for when left out on a terminal)',
    )
    .option(
      '--password-stdin',
      'require the password read from stdin (keeps it off the command line and out of history)',
    )
    .option('--expires <duration>', 'expire after this long (e.g. 30m, 24h); default never')
    .action(
      async (
        app: string,
        opts: { password?: string | true; passwordStdin?: boolean; expires?: string },
        cmd: Command,
      ) => {
        const { out, api } = contextOf(cmd);
        const password = await passwordFrom(opts);
        const body = {
          ...(password !== undefined ? { password } : {}),
          ...(opts.expires !== undefined ? { expires_in: opts.expires } : {}),
        };
        const link = await (
          await api()
        ).call<ShareLink>('POST', `${appPath(app)}/share-links`, body);
        out.result(link, [
          link.url,
          `token: ${link.token}`,
          `password: ${link.has_password ? 'yes' : 'no'}; expires: ${link.expires_at ?? 'never'}`,
        ]);
      },
    );

  share
    .command('ls')
    .description("list an app's active share links")
    .argument('<app>', "the app's name")
    .action(async (app: string, _opts: unknown, cmd: Command) => {
      const { out, api } = contextOf(cmd);
      const list = await (
        await api()
      ).call<{ items: ShareLink[]; total: number }>('GET', `${appPath(app)}/share-links`);
      if (list.items.length === 0) {
        out.result(list, `no share links for ${app}: create one with slipway share create ${app}`);
        return;
      }
      const rows = list.items.map((l) => [
        l.token,
        l.has_password ? 'yes' : 'no',
        l.expires_at ?? 'never',
        l.url,
      ]);
      out.result(list, table(['TOKEN', 'PASSWORD', 'EXPIRES', 'URL'], rows));
    });

  share
    .command('revoke')
    .description('revoke a share link')
    .argument('<token>', 'the link token (from share ls)')
    .action(async (token: string, _opts: unknown, cmd: Command) => {
      const { out, api } = contextOf(cmd);
      await (await api()).call('DELETE', `/api/share-links/${encodeURIComponent(token)}`);
      out.result({ token, revoked: true }, 'revoked');
    });
}

async function passwordFrom(opts: {
  password?: string | true;
  passwordStdin?: boolean;
}): Promise<string | undefined> {
  if (opts.passwordStdin && opts.password !== undefined) {
    throw usageError('--password and --password-stdin both give the password', 'pass one of them');
  }
  if (opts.passwordStdin) return nonEmpty(withoutNewline(await readStdin()), '--password-stdin');
  if (opts.password !== true) return opts.password;
  if (!process.stdin.isTTY) {
    throw usageError(
      '--password needs a value when not on a terminal',
      'pipe the password in with --password-stdin',
    );
  }
  return nonEmpty(await readSecret('share link password: '), '--password');
}

function nonEmpty(password: string, flag: string): string {
  if (password === '') throw usageError(`the password from ${flag} is empty`);
  return password;
}

/** `echo pw |` and a file ending in a newline mean the password without it. */
const withoutNewline = (text: string): string => text.replace(/\r?\n$/, '');
