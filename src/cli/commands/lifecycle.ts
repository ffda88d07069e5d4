import type { Command } from 'commander';
import { appPath, type AppView } from '../api-client.js';
import { confirm } from '../confirm.js';
import { contextOf } from '../context.js';
import { CliError, EXIT, usageError } from '../errors.js';

export function lifecycleCommands(program: Command): void {
  for (const [verb, description] of [
    ['suspend', 'stop an app now; the next request to it wakes it'],
    ['resume', 'start a suspended app'],
  ] as const) {
    program
      .command(verb)
      .description(description)
      .argument('<app>', "the app's name")
      .action(async (app: string, _opts: unknown, cmd: Command) => {
        const { out, api } = contextOf(cmd);
        const view = await (await api()).call<AppView>('POST', `${appPath(app)}/${verb}`);
        out.result(view, `${app}: ${view.phase}`);
      });
  }

  program
    .command('rm')
    .description('delete an app, its versions and share links')
    .argument('<app>', "the app's name")
    .option('-y, --yes', 'do not ask for confirmation')
    .action(async (app: string, opts: { yes?: boolean }, cmd: Command) => {
      const { out, api: connect } = contextOf(cmd);
      if (!opts.yes) {
        // Off a terminal nobody can answer, and deleting is not undone: scripts say --yes.
        if (!process.stdin.isTTY || out.json) {
          throw usageError(`not deleting ${app} without confirmation`, 'pass --yes');
        }
        if (!(await confirm(`Delete ${app} and all its versions?`))) {
          throw new CliError(
            EXIT.usage,
            'cancelled',
            `${app} was not deleted`,
            `to delete it, run slipway rm ${app} again and answer y`,
          );
        }
      }
      await (await connect()).call('DELETE', appPath(app));
      out.result({ app_id: app, deleted: true }, `deleted ${app}`);
    });
}
