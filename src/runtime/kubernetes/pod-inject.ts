import { withInlineSource, type InjectRequest, type InjectResponse } from '../../agent/protocol.js';
import {
  AppExitError,
  RuntimeError,
  uploadInHand,
  type InjectSpec,
  type InjectStages,
  type Upload,
} from '../runtime.js';
import { callAgent } from './agent-client.js';
import type { PodSandbox } from './pod-sandbox.js';
import type { Log } from '../../logging.js';

export interface InjectDeps {
  /** A short-lived URL the agent pulls the source from (a pre-signed object-store GET). */
  sourceUrl(key: string): Promise<string>;
  /** The source itself when it is small (INLINE_SOURCE_MAX): it rides in the inject request. */
  inlineSource(key: string): Promise<Buffer | undefined>;
  startTimeoutMs: number;
  /** `runtime.egress.allowPrivate`. */
  allowPrivate: string[];
  log: Log;
}

/** Past the agent's own start deadline, how long the control plane waits for its answer. */
const INJECT_GRACE_MS = 2_000;
/** An inject cut off mid-call: how long the event stream has to say the app exited. */
const EXIT_REPORT_WAIT_MS = 1_000;

/**
 * One inject into a claimed pod: `POST /inject` with the source in it when it is small, else with
 * a source URL and the pod's egress opened to the object store for the pull only; the answer
 * turned into success, AppExitError (the app exited first) or RuntimeError (transient unless the
 * source or entrypoint cannot work).
 */
export async function injectPod(
  pod: PodSandbox,
  spec: InjectSpec,
  deps: InjectDeps,
  upload?: Upload,
): Promise<InjectStages> {
  if (spec.template !== pod.template) {
    throw new RuntimeError(`sandbox ${pod.id} runs ${pod.template}, not ${spec.template}`, false);
  }
  // A source in hand goes as it is; what the store serves waits until the store has it.
  const inline = await uploadInHand(upload, true);
  const request = withInlineSource(
    {
      sourceKey: spec.sourceKey,
      env: spec.env,
      startTimeoutMs: deps.startTimeoutMs,
      ...(spec.entrypoint ? { entrypoint: spec.entrypoint } : {}),
    },
    inline ?? (await smallSource(spec.sourceKey, deps)),
  );
  const own = { allowedHosts: spec.allowedHosts, allowPrivate: deps.allowPrivate };
  if (request.source !== undefined) {
    pod.egress.rules.set(own);
    return startApp(pod, spec, request, deps);
  }
  const sourceUrl = await deps.sourceUrl(spec.sourceKey).catch((err: unknown) => {
    throw new RuntimeError(`cannot hand out the source: ${(err as Error).message}`, true);
  });
  // The pull goes through the gate like everything else out of the pod: the object store is let
  // through for the inject only, then the app's own list applies.
  const store = new URL(sourceUrl);
  const storePort = store.port || (store.protocol === 'https:' ? '443' : '80');
  pod.egress.rules.set({
    allowedHosts: [...spec.allowedHosts, `${store.hostname}:${storePort}`],
    allowPrivate: [...deps.allowPrivate, store.hostname.replace(/^\[|\]$/g, '')],
  });
  try {
    return await startApp(pod, spec, { ...request, sourceUrl }, deps);
  } finally {
    pod.egress.rules.set(own);
  }
}

/** The source to send along, when it is small and can be read; else the pod pulls it. */
async function smallSource(key: string, deps: InjectDeps): Promise<Buffer | undefined> {
  try {
    return await deps.inlineSource(key);
  } catch (err) {
    deps.log('info', 'source not read for the inject; the pod pulls it', {
      source: key,
      error: (err as Error).message,
    });
    return undefined;
  }
}

async function startApp(
  pod: PodSandbox,
  spec: InjectSpec,
  request: InjectRequest,
  deps: InjectDeps,
): Promise<InjectStages> {
  const started = performance.now();
  const timeoutMs = deps.startTimeoutMs + INJECT_GRACE_MS;
  const answer = await callAgent(
    pod.control,
    pod.token,
    'POST',
    '/inject',
    request,
    timeoutMs,
  ).catch(async (err: unknown) => {
    // An app's own process.exit() ends the agent mid-call; the event stream says how.
    const exit = await pod.exitWithin(EXIT_REPORT_WAIT_MS);
    if (exit) throw new AppExitError(exit);
    throw new RuntimeError(`inject into sandbox ${pod.id} failed: ${(err as Error).message}`, true);
  });
  const body = answer.body as InjectResponse | undefined;
  if (answer.status === 200 && body?.ok) {
    deps.log('info', 'app started', {
      sandbox: pod.id,
      app: spec.appId,
      hostMs: Math.round(performance.now() - started),
      agentMs: body.ms,
    });
    return { unpack: body.ms.pull, 'app-start': body.ms.start };
  }
  if (answer.status === 422 && body && !body.ok && 'exit' in body) {
    throw new AppExitError({
      code: body.exit.code,
      signal: body.exit.signal,
      lastLines: body.exit.lastLines.length > 0 ? body.exit.lastLines : pod.lastLines(),
    });
  }
  const error = body && !body.ok && 'error' in body ? body.error : `status ${answer.status}`;
  // 400: the source or entrypoint cannot work, a retry would not help.
  throw new RuntimeError(error, answer.status !== 400);
}
