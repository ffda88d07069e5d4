import type { Command } from 'commander';
import { appPath, type AppView } from '../api-client.js';
import { contextOf } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { openInBrowser } from '../opener.js';

export function openCommand(program: Command): void {
  program
    .command('open')
    .description("open an app's URL in the browser (or print it when there is none)")
    .argument('<app>', "the app's name")
    .action(async (app: string, _opts: unknown, cmd: Command) => {
      const { out, api } = contextOf(cmd);
      const view = await (await api()).call<AppView>('GET', appPath(app));
      if (!view.url) {
        throw new CliError(
          EXIT.api,
          'no_url',
          `${app} has no URL (phase ${view.phase})`,
          `see slipway status ${app}`,
        );
      }
      // Scripts asked for data, not a browser window.
      if (out.json) {
        out.result({ app_id: app, url: view.url, opened: false }, view.url);
        return;
      }
      const how = await openInBrowser(view.url);
      if (!how.opened) out.note(`cannot open a browser here: ${how.why}; open the URL yourself`);
      out.result(
        { app_id: app, url: view.url, opened: how.opened },
        how.opened ? `opened ${view.url}` : view.url,
      );
    });
}
