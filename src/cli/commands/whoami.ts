import type { Command } from 'commander';
import { contextOf } from '../context.js';

/** GET /api/whoami (api/openapi.yaml); the fields the CLI shows. */
interface Whoami {
  user_id: string;
  name: string;
  role: string;
  scopes: string[];
  mode: string;
  department?: string;
}

export function whoamiCommand(program: Command): void {
  program
    .command('whoami')
    .description('show who the saved login (or SLIPWAY_TOKEN) is on which server')
    .action(async (_opts: unknown, cmd: Command) => {
      const { out, api: connect } = contextOf(cmd);
      const api = await connect();
      const me = await api.call<Whoami>('GET', '/api/whoami');
      out.result({ url: api.baseURL, ...me }, [
        `${me.user_id} (${me.role}) on ${api.baseURL}`,
        `auth mode:   ${me.mode}`,
        `scopes:      ${me.scopes.length > 0 ? me.scopes.join(', ') : 'all'}`,
        ...(me.department ? [`department:  ${me.department}`] : []),
      ]);
    });
}
