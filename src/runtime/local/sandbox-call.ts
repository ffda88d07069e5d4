import { callAgent, type AgentReply } from './agent-client.js';
import type { End, LocalSandbox } from './sandbox.js';
import { sleep } from './teardown.js';

/** How a call to a sandbox's agent ended: its answer, a broken connection, or the sandbox gone. */
export type Outcome =
  | { kind: 'reply'; reply: AgentReply }
  | { kind: 'broken'; err: unknown }
  | { kind: 'closed'; end: End };

/** After the agent's connection broke, how long its sandbox gets to show it exited. */
const EXIT_WAIT_MS = 2_000;

/**
 * One POST to the agent, raced against the sandbox's end: a sandbox that dies mid-call (the app
 * took the agent with it, the memory limit killed it) must not leave the caller waiting out the
 * whole timeout.
 */
export function callUntilClosed(
  sandbox: LocalSandbox,
  path: string,
  body: unknown,
  timeoutMs: number,
): Promise<Outcome> {
  const call = callAgent(sandbox.agentPath, sandbox.token, 'POST', path, {
    body,
    timeoutMs,
    link: sandbox.link,
  }).then(
    (reply) => ({ kind: 'reply' as const, reply }),
    (err: unknown) => ({ kind: 'broken' as const, err }),
  );
  return Promise.race([call, sandbox.closed.then((end) => ({ kind: 'closed' as const, end }))]);
}

/** A broken connection usually means the sandbox is going: its end, if it comes soon. */
export function endSoon(sandbox: LocalSandbox): Promise<End | undefined> {
  return Promise.race([sandbox.closed, sleep(EXIT_WAIT_MS).then(() => undefined)]);
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
