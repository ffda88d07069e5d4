import type { Command } from 'commander';
import { ApiClient } from './api-client.js';
import { resolveCredentials } from './credentials.js';
import { Output } from './output.js';

export interface Context {
  out: Output;
  /** The API as the saved login or SLIPWAY_URL/SLIPWAY_TOKEN say; exit 3 when neither does. */
  api(): Promise<ApiClient>;
}

/** What every action needs, from the global options (`--json`) of the command it runs under. */
export function contextOf(cmd: Command): Context {
  const json = (cmd.optsWithGlobals() as { json?: boolean }).json === true;
  return { out: new Output(json), api: async () => new ApiClient(await resolveCredentials()) };
}

/** Commander's collector for repeatable options (`--env A=1 --env B=2`). */
export const collect = (value: string, previous: string[]): string[] => [...previous, value];
