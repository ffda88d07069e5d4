import type { Command } from 'commander';
import { appPath, type AppView } from '../api-client.js';
import { contextOf } from '../context.js';
import { table } from '../output.js';

export function appsCommands(program: Command): void {
  program
    .command('apps')
    .alias('ls')
    .description('list your apps')
    .action(async (_opts: unknown, cmd: Command) => {
      const { out, api } = contextOf(cmd);
      const list = await (await api()).call<{ items: AppView[]; total: number }>('GET', '/v1/apps');
      if (list.items.length === 0) {
        out.result(list, 'no apps yet: deploy one with slipway deploy');
        return;
      }
      const rows = list.items.map((app) => [
        app.name,
        app.phase,
        app.live_version === null ? '-' : String(app.live_version),
        app.url ?? '',
      ]);
      out.result(list, table(['NAME', 'PHASE', 'VERSION', 'URL'], rows));
    });

  program
    .command('status')
    .description("show an app's phase, version and URL")
    .argument('<app>', "the app's name")
    .action(async (app: string, _opts: unknown, cmd: Command) => {
      const { out, api } = contextOf(cmd);
      const view = await (await api()).call<AppView>('GET', appPath(app));
      out.result(view, describeApp(view));
    });
}

function describeApp(app: AppView): string[] {
  const last = app.last_deploy;
  const lastLine = last
    ? `version ${last.version} ${last.outcome}${last.reason ? ` (${last.reason}: ${last.message ?? ''})` : ''}`
    : '-';
  return [
    `name:          ${app.name}`,
    `phase:         ${app.phase} (${app.reason}: ${app.message})`,
    `url:           ${app.url ?? '-'}`,
    `live version:  ${app.live_version ?? '-'}`,
    `last deploy:   ${lastLine}`,
    `runtime:       ${app.runtime.template}, ${app.runtime.lane} lane`,
    `deployed at:   ${app.last_deployed_at}`,
    `env:           ${app.env.map((e) => e.name).join(', ') || '-'}`,
  ];
}
