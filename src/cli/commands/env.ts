import { parseEnv } from 'node:util';
import type { Command } from 'commander';
import { appPath, type ApiClient, type AppView } from '../api-client.js';
import { contextOf } from '../context.js';
import { usageError } from '../errors.js';
import { checkEnvNames } from '../local-checks.js';
import { waitForOutcome } from '../phase-watch.js';
import { readStdin } from '../stdin.js';

/**
 * `slipway env ls|set|unset`: an app's environment variables. Values are write-only: the server
 * never shows them again, so `ls` lists names. `set` and `unset` make a config release (PATCH
 * /v1/apps/{id}): a new version of the live source, switched to like any deploy.
 */
export function envCommands(program: Command): void {
  const env = program
    .command('env')
    .description("list or change an app's environment variables (values are write-only)");

  env
    .command('ls')
    .alias('list')
    .description("list the names of the variables the app's live release runs with")
    .argument('<app>', "the app's name")
    .action(async (app: string, _opts: unknown, cmd: Command) => {
      const { out, api } = contextOf(cmd);
      const view = await (await api()).call<AppView>('GET', appPath(app));
      const names = view.env.map((e) => e.name);
      out.result(
        { app_id: view.app_id, env: view.env },
        names.length > 0 ? names : `${app} has no env variables`,
      );
    });

  env
    .command('set')
    .description('set variables as a new release of the live source; the others keep their values')
    .argument('<app>', "the app's name")
    .argument('[pairs...]', 'KEY=VALUE (values on the command line land in shell history)')
    .option('--stdin', 'read KEY=VALUE lines (dotenv) from stdin, kept out of shell history')
    .action(async (app: string, pairs: string[], opts: { stdin?: boolean }, cmd: Command) => {
      const { out, api } = contextOf(cmd);
      const set = new Map<string, string>();
      if (opts.stdin) {
        for (const [name, value] of Object.entries(parseEnv(await readStdin()))) {
          if (value !== undefined) set.set(name, value);
        }
      }
      for (const pair of pairs) {
        const eq = pair.indexOf('=');
        if (eq <= 0) throw usageError(`${pair} is not KEY=VALUE`);
        set.set(pair.slice(0, eq), pair.slice(eq + 1));
      }
      if (set.size === 0) throw usageError('nothing to set', 'pass KEY=VALUE or --stdin');
      checkEnvNames([...set.keys()], 'env set');
      const items = [...set].map(([name, value]) => ({ name, value }));
      const view = await release(await api(), app, { set: items });
      out.result(view, released(view, `set ${[...set.keys()].join(', ')} on ${app}`));
    });

  env
    .command('unset')
    .description('remove variables as a new release of the live source')
    .argument('<app>', "the app's name")
    .argument('<names...>', 'the variables to remove')
    .action(async (app: string, names: string[], _opts: unknown, cmd: Command) => {
      const { out, api } = contextOf(cmd);
      checkEnvNames(names, 'env unset');
      const view = await release(await api(), app, { unset: names });
      out.result(view, released(view, `unset ${names.join(', ')} on ${app}`));
    });
}

/** Sends the change and waits for the release it made (or the app, when it made none) to settle. */
async function release(
  api: ApiClient,
  app: string,
  env: { set?: { name: string; value: string }[]; unset?: string[] },
): Promise<AppView> {
  await api.call<AppView>('PATCH', appPath(app), { env });
  return waitForOutcome(api, app);
}

const released = (view: AppView, what: string): string =>
  `${what}: version ${view.live_version ?? '-'} serves${view.url ? ` at ${view.url}` : ''}`;
