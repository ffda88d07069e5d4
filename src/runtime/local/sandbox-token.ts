import { createHmac } from 'node:crypto';

/**
 * The token one sandbox's agent and doors accept, derived from the shared agent token. The shared
 * token itself never enters a sandbox: an app that digs its sandbox's token out of the agent's
 * memory (a node app runs in that process) can only talk to its own agent and its own source.
 */
export function sandboxToken(agentToken: string, sandboxId: string): string {
  return createHmac('sha256', agentToken).update(`slipway-sandbox:${sandboxId}`).digest('hex');
}
