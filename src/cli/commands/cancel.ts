import type { Command } from 'commander';
import { appPath, type AppView } from '../api-client.js';
import { contextOf } from '../context.js';

export function cancelCommand(program: Command): void {
  program
    .command('cancel')
    .description(
      'cancel the deploy, rollback or env change on its way; what serves goes on serving',
    )
    .argument('<app>', "the app's name")
    .action(async (app: string, _opts: unknown, cmd: Command) => {
      const { out, api } = contextOf(cmd);
      const view = await (await api()).call<AppView>('POST', `${appPath(app)}/cancel`);
      out.result(view, cancelledLine(view));
    });
}

/** What was cancelled, and what serves now. */
function cancelledLine(view: AppView): string {
  const version = view.last_deploy?.version;
  const what = version === undefined ? 'the release on its way' : `version ${version}`;
  const serving =
    view.live_version !== null
      ? `version ${view.live_version} still serves: ${view.url ?? '-'}`
      : 'nothing serves';
  return `cancelled ${what} of ${view.app_id}; ${serving}`;
}
