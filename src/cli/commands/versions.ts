import type { Command } from 'commander';
import { appPath, type AppView } from '../api-client.js';
import { contextOf } from '../context.js';
import { usageError } from '../errors.js';
import { table } from '../output.js';
import { interruptible } from '../interrupt.js';
import { waitForOutcome } from '../phase-watch.js';
import { watchRelease } from '../release-watch.js';

/** A version entry of GET /v1/apps/{id}/versions; fields the CLI shows. */
interface VersionView {
  version: number;
  timestamp: string;
  template: string;
  lane: string;
  outcome?: string;
  reason?: string;
  rolled_back_from?: number;
  live: boolean;
}

export function versionCommands(program: Command): void {
  program
    .command('versions')
    .description("list an app's versions, newest first")
    .argument('<app>', "the app's name")
    .action(async (app: string, _opts: unknown, cmd: Command) => {
      const { out, api } = contextOf(cmd);
      const list = await (
        await api()
      ).call<{ items: VersionView[] }>('GET', `${appPath(app)}/versions`);
      const rows = list.items.map((v) => [
        `${v.version}${v.live ? '*' : ''}`,
        v.outcome ?? '-',
        v.timestamp,
        `${v.template}/${v.lane}`,
        [
          v.rolled_back_from ? `rollback of ${v.rolled_back_from}` : '',
          v.reason && v.outcome === 'Failed' ? v.reason : '',
        ]
          .filter(Boolean)
          .join('; '),
      ]);
      out.result(list, [
        ...table(['VERSION', 'OUTCOME', 'DEPLOYED', 'RUNTIME', 'NOTE'], rows),
        '(* serves now)',
      ]);
    });

  program
    .command('rollback')
    .description("redeploy an earlier version's release as a new version")
    .argument('<app>', "the app's name")
    .argument('<version>', 'the version to bring back')
    .action(async (app: string, version: string, _opts: unknown, cmd: Command) => {
      const { out, api: connect } = contextOf(cmd);
      if (!/^[1-9][0-9]*$/.test(version))
        throw usageError(`version "${version}" is not a positive number`);
      const api = await connect();
      // The rollback's new version starts from its source again (an install, a build): shown as
      // a deploy's are.
      const watch = await watchRelease(api, app, out);
      let view: AppView | undefined;
      try {
        const interrupt = interruptible(app, 'rollback');
        // The request is on its way at once: the server rolls back whether or not we watch.
        interrupt.arm();
        view = await interrupt.watch(async () => {
          await api.call<AppView>('POST', `${appPath(app)}/rollback`, {
            version: Number(version),
          });
          return waitForOutcome(api, app, watch.polled, watch.wait);
        });
      } finally {
        await watch.stop(view);
      }
      out.result(
        view,
        `rolled ${app} back to version ${version}, now serving as version ${view.live_version}: ${view.url ?? '-'}`,
      );
    });
}
