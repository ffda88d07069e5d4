import { stat } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { Option, type Command } from 'commander';
import type { AppView } from '../api-client.js';
import { collect, contextOf } from '../context.js';
import { buildMetadata, nameFromFolder, type DeployFlags } from '../deploy-metadata.js';
import { CliError, EXIT, usageError } from '../errors.js';
import { MAX_SOURCE_BYTES, packFiles } from '../pack.js';
import { interruptible } from '../interrupt.js';
import { waitForOutcome } from '../phase-watch.js';
import { formatBytes, uploadBar } from '../progress-bar.js';
import { watchRelease } from '../release-watch.js';
import { sourceFiles } from '../source-files.js';
import { uploadDeploy } from '../upload.js';

export function deployCommand(program: Command): void {
  program
    .command('deploy')
    .description('pack a folder (respecting .gitignore and .slipwayignore) and deploy it')
    .argument('[dir]', 'the folder to deploy', '.')
    .option('--name <name>', "the app's name (default: the folder's name, made URL-safe)")
    .option(
      '--env <KEY=VALUE>',
      "an environment variable (repeatable); without --env or --env-file a redeploy keeps the app's env (change it with slipway env)",
      collect,
      [],
    )
    .option('--env-file <path>', 'environment variables from a dotenv file')
    .option(
      '--egress <host>',
      "a host the app may reach (repeatable); without it a redeploy keeps the app's hosts",
      collect,
      [],
    )
    .option(
      '--ttl <duration>',
      "idle time before the app is suspended (e.g. 30m, 2h); without it a redeploy keeps the app's",
    )
    .addOption(
      new Option('--access <access>', 'who may open the app').choices(['public', 'private']),
    )
    .action(async (dir: string, flags: DeployFlags, cmd: Command) => {
      const { out, api: connect } = contextOf(cmd);
      const root = resolve(dir);
      if (!(await isFolder(root))) throw usageError(`${dir} is not a folder`);
      const name = flags.name ?? nameFromFolder(basename(root));
      if (!name) throw usageError(`cannot make an app name of "${basename(root)}"`, 'pass --name');
      const metadata = await buildMetadata(name, flags);
      const api = await connect();

      const files = await sourceFiles(root);
      if (files.length === 0)
        throw usageError(`nothing to deploy in ${dir}: every file is ignored`);
      const tarball = await packFiles(root, files);
      if (tarball.length > MAX_SOURCE_BYTES) {
        throw new CliError(
          EXIT.api,
          'source_too_large',
          `the packed source is over ${formatBytes(MAX_SOURCE_BYTES)}, the server's limit`,
          'leave large files out with a .slipwayignore',
        );
      }
      out.note(
        `packed ${files.length} files of ${root} (${formatBytes(tarball.length)}) as ${name}`,
      );

      const bar = out.interactive ? uploadBar('uploading') : undefined;
      // On a terminal the build's lines are shown as they come; a script reads `slipway logs`.
      const watch = await watchRelease(api, name, out);
      let view: AppView | undefined;
      const interrupt = interruptible(name, 'deploy');
      try {
        view = await interrupt.watch(async () => {
          const answer = await uploadDeploy(api, metadata, tarball, (sent, total) => {
            bar?.update(sent, total);
            // The whole source is sent: the server deploys it whether or not we watch.
            if (sent === total) interrupt.arm();
          });
          if (answer.status !== 200 && answer.status !== 202) {
            throw api.failure(answer.status, answer.text);
          }
          watch.appExists();
          if (answer.status === 202) out.note('  accepted; waiting for it to start (slower path)');
          return waitForOutcome(api, name, watch.polled, watch.wait);
        });
      } finally {
        bar?.stop();
        await watch.stop(view);
      }
      const version = view.live_version ?? view.last_deploy?.version;
      out.result(view, `deployed ${name} version ${version}: ${view.url ?? '(no URL yet)'}`);
    });
}

async function isFolder(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}
