import { join } from 'node:path';
import {
  AGENT_SOCK,
  EGRESS_SOCK,
  type InjectRequest,
  type InjectResponse,
} from '../../agent/protocol.js';
import { AppExitError, RuntimeError, type InjectSpec } from '../runtime.js';
import { callAgent, type AgentReply } from './agent-client.js';
import { openEgressDoor } from './egress-door.js';
import type { LocalSandbox } from './sandbox.js';
import { sleep } from './teardown.js';
import type { SocketOwner } from './unix-listener.js';

export interface InjectDeps {
  startTimeoutMs: number;
  allowPrivate: string[];
  owner: SocketOwner | undefined;
  log: (msg: string, extra?: object) => void;
}

/** Past the agent's own deadline, how long the host waits for an agent whose loop is blocked. */
const HOST_GRACE_MS = 1_000;
/** After the agent's connection broke, how long its sandbox gets to show it exited. */
const EXIT_WAIT_MS = 2_000;

/**
 * One round trip: open the egress door with the app's allowed hosts, let the source door serve
 * this key, POST /inject, and turn the answer into success, AppExitError or RuntimeError. A sandbox
 * whose inject failed is of no further use and is reaped before the error reaches the caller.
 */
export async function injectInto(
  sandbox: LocalSandbox,
  spec: InjectSpec,
  deps: InjectDeps,
): Promise<void> {
  if (sandbox.phase !== 'claimed') {
    throw new RuntimeError(`sandbox ${sandbox.id} is ${sandbox.phase}, not freshly claimed`, false);
  }
  if (spec.template !== sandbox.template) {
    throw new RuntimeError(
      `sandbox ${sandbox.id} runs ${sandbox.template}, not ${spec.template}`,
      false,
    );
  }
  if (!sandbox.alive) {
    throw new RuntimeError(`sandbox ${sandbox.id} died before the inject began`, true);
  }
  sandbox.beginInject();
  const started = performance.now();
  try {
    const egress = await openEgressDoor({
      path: join(sandbox.dir, EGRESS_SOCK),
      allowedHosts: spec.allowedHosts,
      allowPrivate: deps.allowPrivate,
      owner: deps.owner,
      log: (msg, extra) => deps.log(msg, { sandbox: sandbox.id, app: spec.appId, ...extra }),
    });
    sandbox.addCloser(egress.close);
    sandbox.allowSource(spec.sourceKey);
    const request: InjectRequest = {
      sourceKey: spec.sourceKey,
      env: spec.env,
      startTimeoutMs: deps.startTimeoutMs,
      ...(spec.entrypoint ? { entrypoint: spec.entrypoint } : {}),
    };
    const call = callAgent(join(sandbox.dir, AGENT_SOCK), sandbox.token, 'POST', '/inject', {
      body: request,
      timeoutMs: deps.startTimeoutMs + HOST_GRACE_MS,
    }).then(
      (reply) => ({ kind: 'reply' as const, reply }),
      (err: unknown) => ({ kind: 'broken' as const, err }),
    );
    const outcome = await Promise.race([
      call,
      sandbox.closed.then((end) => ({ kind: 'closed' as const, end })),
    ]);
    if (outcome.kind === 'reply' && outcome.reply.status === 200) {
      if (sandbox.alive) {
        sandbox.phase = 'running';
        const body = outcome.reply.body as InjectResponse;
        const hostMs = Math.round((performance.now() - started) * 10) / 10;
        deps.log('app started', {
          sandbox: sandbox.id,
          app: spec.appId,
          hostMs,
          ...('ms' in body ? { agentMs: body.ms } : {}),
        });
        return;
      }
      // Answered, then died before we looked: the supervisor must hear of it from us.
      throw new AppExitError(sandbox.exitReport(await sandbox.closed));
    }
    throw await failure(sandbox, outcome, deps.startTimeoutMs);
  } catch (err) {
    // Nothing to stop gracefully: the app exited or never answered.
    sandbox.phase = 'failed';
    await sandbox.reap();
    if (err instanceof AppExitError || err instanceof RuntimeError) throw err;
    throw new RuntimeError(`inject into sandbox ${sandbox.id} failed: ${String(err)}`, true);
  }
}

type Outcome =
  | { kind: 'reply'; reply: AgentReply }
  | { kind: 'broken'; err: unknown }
  | { kind: 'closed'; end: { code: number | null; signal: string | null } };

async function failure(
  sandbox: LocalSandbox,
  outcome: Outcome,
  startTimeoutMs: number,
): Promise<Error> {
  if (outcome.kind === 'reply') {
    const body = outcome.reply.body as InjectResponse | undefined;
    if (outcome.reply.status === 422 && body && 'exit' in body) return new AppExitError(body.exit);
    const message = body && 'error' in body ? body.error : `agent answered ${outcome.reply.status}`;
    // 400: the source or entrypoint; 504: the app never listened. Neither improves on retry.
    const permanent = outcome.reply.status === 400 || outcome.reply.status === 504;
    return new RuntimeError(message, !permanent);
  }
  if (outcome.kind === 'closed') return new AppExitError(sandbox.exitReport(outcome.end));
  // The connection broke: if the sandbox is going, the app took the agent with it (node runs in it).
  const end = await Promise.race([sandbox.closed, sleep(EXIT_WAIT_MS).then(() => undefined)]);
  if (end) return new AppExitError(sandbox.exitReport(end));
  const why = outcome.err instanceof Error ? outcome.err.message : String(outcome.err);
  if (/within \d+ ms/.test(why)) {
    return new RuntimeError(
      `the app did not start within ${startTimeoutMs} ms (its event loop may be blocked)`,
      false,
    );
  }
  return new RuntimeError(`inject failed: ${why}`, true);
}
