import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { appsCommands } from './commands/apps.js';
import { cancelCommand } from './commands/cancel.js';
import { deployCommand } from './commands/deploy.js';
import { envCommands } from './commands/env.js';
import { lifecycleCommands } from './commands/lifecycle.js';
import { logsCommand } from './commands/logs.js';
import { loginCommands } from './commands/login.js';
import { openCommand } from './commands/open.js';
import { shareCommands } from './commands/share.js';
import { versionCommands } from './commands/versions.js';
import { whoamiCommand } from './commands/whoami.js';
import { CliError, EXIT } from './errors.js';
import { Output } from './output.js';

const EXIT_CODES_HELP = `
Exit codes: 0 done; 1 the server refused or could not be reached; 2 usage error (or cancelled);
3 not logged in or the key was refused; 130 Ctrl-C stopped watching a deploy or rollback (it goes
on: slipway cancel <app> cancels it). With --json, stdout carries only JSON (errors too, as
{"error": {code, message, ...}}); logs print one JSON object per line.`;

const JSON_HELP = 'print machine-readable JSON only';

function program(json: boolean): Command {
  const { version } = JSON.parse(
    readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
  ) as { version: string };
  const root = new Command('slipway')
    .description('deploy a folder to a Slipway server, and manage its apps')
    .version(version)
    .option('--json', JSON_HELP)
    // Options after a command name are that command's: `logs --version 3` is not `slipway --version`.
    .enablePositionalOptions()
    .addHelpText('after', EXIT_CODES_HELP)
    .exitOverride()
    .configureOutput({
      // Under --json the error goes out as JSON (below), not as commander's text.
      outputError: (text, write) => {
        if (!json) write(text);
      },
    });
  loginCommands(root);
  whoamiCommand(root);
  deployCommand(root);
  cancelCommand(root);
  appsCommands(root);
  envCommands(root);
  logsCommand(root);
  versionCommands(root);
  lifecycleCommands(root);
  shareCommands(root);
  openCommand(root);
  // Subcommands take exitOverride and the output settings only when set on each, and --json is
  // accepted after the command name too (`slipway apps --json`).
  for (const cmd of allCommands(root)) {
    cmd.exitOverride().configureOutput(root.configureOutput()).option('--json', JSON_HELP);
  }
  return root;
}

function allCommands(cmd: Command): Command[] {
  return cmd.commands.flatMap((sub) => [sub, ...allCommands(sub)]);
}

/** Runs the CLI on `argv` (process.argv shape); resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  const out = new Output(json);
  try {
    await program(json).parseAsync(argv);
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version')
        return EXIT.ok;
      // Commander has printed its message (not under --json); the next step is ours to add.
      const message = err.message.replace(/^error: /, '');
      if (json) out.error(new CliError(EXIT.usage, 'usage', message, 'see slipway --help'));
      else process.stderr.write('next: see slipway --help\n');
      return EXIT.usage;
    }
    const error =
      err instanceof CliError
        ? err
        : new CliError(
            EXIT.api,
            'internal',
            (err as Error).message ?? String(err),
            'this is a bug in slipway; please report it',
          );
    out.error(error);
    return error.exitCode;
  }
}
