import { INLINE_SOURCE_MAX, withInlineSource, type InjectResponse } from '../../agent/protocol.js';
import {
  AppExitError,
  RuntimeError,
  uploadInHand,
  type InjectSpec,
  type InjectStages,
  type Upload,
} from '../runtime.js';
import type { SourceStore } from '../../sources/source-store.js';
import { installInto, type InstallDeps } from './install-call.js';
import type { LocalSandbox } from './sandbox.js';
import { callUntilClosed, endSoon, errorText, type Outcome } from './sandbox-call.js';

export interface InjectDeps extends InstallDeps {
  startTimeoutMs: number;
  /** Where a small source is read from to go with the inject (INLINE_SOURCE_MAX). */
  sources: SourceStore;
}

/** Past the agent's own deadline, how long the host waits for an agent whose loop is blocked. */
const HOST_GRACE_MS = 1_000;

/**
 * One round trip: set the egress door to the app's allowed hosts, let the source door serve
 * this key, run the general lane's install (the door widened to the package index meanwhile),
 * POST /inject (with the source in it when it is small), and turn the answer into success,
 * AppExitError or RuntimeError. A sandbox whose inject failed is of no further use and is reaped
 * before the error reaches the caller.
 */
export async function injectInto(
  sandbox: LocalSandbox,
  spec: InjectSpec,
  deps: InjectDeps,
  upload?: Upload,
): Promise<InjectStages> {
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
    const egress = sandbox.egress;
    egress.setRules({ allowedHosts: spec.allowedHosts, allowPrivate: deps.allowPrivate });
    sandbox.allowSource(spec.sourceKey);
    // The general lane's install pulls the source; otherwise a small one rides along, as it came
    // when it is in hand. What the store serves waits until the store has it.
    let source = await uploadInHand(upload, spec.lane === 'fast');
    if (spec.lane === 'general') await installInto(sandbox, spec, egress, deps);
    else source ??= await deps.sources.readWhole(spec.sourceKey, INLINE_SOURCE_MAX);
    const request = withInlineSource(
      {
        sourceKey: spec.sourceKey,
        env: spec.env,
        startTimeoutMs: deps.startTimeoutMs,
        ...(spec.entrypoint ? { entrypoint: spec.entrypoint } : {}),
      },
      source,
    );
    const timeoutMs = deps.startTimeoutMs + HOST_GRACE_MS;
    // The agent starts the app and answers once it listens: the app's log (and the deploy's
    // activity, app-activity.ts) says which of the two a slow start is stuck in.
    sandbox.note(`version ${spec.version}: started, waiting for it to answer`);
    const outcome = await callUntilClosed(sandbox, '/inject', request, timeoutMs);
    if (outcome.kind === 'reply' && outcome.reply.status === 200) {
      if (sandbox.alive) {
        sandbox.phase = 'running';
        sandbox.serves(spec.appId, spec.version, spec.allowedHosts);
        const body = outcome.reply.body as InjectResponse;
        const hostMs = Math.round((performance.now() - started) * 10) / 10;
        deps.log('info', 'app started', {
          sandbox: sandbox.id,
          app: spec.appId,
          hostMs,
          ...('ms' in body ? { agentMs: body.ms } : {}),
        });
        // The agent's own clock: pulling and unpacking the source, then loading the app until it
        // accepts a connection. The rest of the round trip is the host's.
        return 'ms' in body ? { unpack: body.ms.pull, 'app-start': body.ms.start } : {};
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
  const end = await endSoon(sandbox);
  if (end) return new AppExitError(sandbox.exitReport(end));
  const why = errorText(outcome.err);
  if (/within \d+ ms/.test(why)) {
    return new RuntimeError(
      `the app did not start within ${startTimeoutMs} ms (its event loop may be blocked)`,
      false,
    );
  }
  return new RuntimeError(`inject failed: ${why}`, true);
}
