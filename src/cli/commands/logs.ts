import type { Command } from 'commander';
import { appPath } from '../api-client.js';
import { contextOf } from '../context.js';
import { CliError, EXIT, parseErrorBody, usageError } from '../errors.js';
import { sseMessages } from '../sse.js';

export function logsCommand(program: Command): void {
  program
    .command('logs')
    .description("print an app's recent log lines; -f keeps following new ones")
    .argument('<app>', "the app's name")
    .option('-f, --follow', 'keep the stream open and print lines as they come')
    .option('--version <n>', "only this version's lines")
    .action(async (app: string, opts: { follow?: boolean; version?: string }, cmd: Command) => {
      const { out, api } = contextOf(cmd);
      const query = new URLSearchParams();
      if (opts.follow) query.set('follow', 'true');
      if (opts.version !== undefined) {
        if (!/^[1-9][0-9]*$/.test(opts.version)) {
          throw usageError(`--version "${opts.version}" is not a positive number`);
        }
        query.set('version', opts.version);
      }
      const suffix = query.toString() ? `?${query.toString()}` : '';
      const res = await (await api()).stream(`${appPath(app)}/logs${suffix}`);
      for await (const message of sseMessages(res)) {
        if (message.event === 'error') {
          // The server ends a stream this way (app deleted, server shutting down).
          const body = parseErrorBody(500, message.data);
          throw new CliError(EXIT.api, body.code, body.message, `run slipway logs ${app} again`);
        }
        // `data` is `<ISO time> <text>`; the event id is the version that printed it.
        const space = message.data.indexOf(' ');
        const time = space > 0 ? message.data.slice(0, space) : '';
        const line = space > 0 ? message.data.slice(space + 1) : message.data;
        const version = message.id ? Number(message.id) : null;
        out.record({ time, version, line }, message.data);
      }
    });
}
