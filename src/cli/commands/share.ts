import type { Command } from 'commander';
import { appPath } from '../api-client.js';
import { contextOf } from '../context.js';
import { usageError } from '../errors.js';
import { table } from '../output.js';
import { readSecret } from '../secret-prompt.js';

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
    .option('--expires <duration>', 'expire after this long (e.g. 30m, 24h); default never')
    .action(
      async (app: string, opts: { password?: string | true; expires?: string }, cmd: Command) => {
        const { out, api } = contextOf(cmd);
        const password = opts.password === true ? await askPassword() : opts.password;
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

async function askPassword(): Promise<string> {
  if (!process.stdin.isTTY) throw usageError('--password needs a value when not on a terminal');
  const password = await readSecret('share link password: ');
  if (password === '') throw usageError('the password is empty');
  return password;
}
