import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { timeoutOptions } from '../../cluster/request-options.js';
import { callAgent } from './agent-client.js';
import { podSandbox, type BindDeps, type Claim } from './claim-binding.js';
import { isTrue } from './claim-watch.js';
import type { KubeApply } from './kube-apply.js';
import type { PodSandbox } from './pod-sandbox.js';
import { CLAIMS, EXT, LABELS } from './sandbox-template.js';

/**
 * What a claim's pod runs once its inject succeeded, written on the claim by the control plane
 * (the pod has no API access): the app, its version and the egress the app was granted, so the
 * next control plane can adopt it with the same gate rules.
 */
export const RUNS_ANNOTATION = 'slipway.dev/runs';

export interface Runs {
  app: string;
  version: number;
  allowedHosts: string[];
}

const CALL_TIMEOUT_MS = 5_000;

/**
 * Writes `runs` on the claim, with its app label (a claim made ahead had none): one merge patch,
 * its other fields stay.
 */
export async function recordRuns(kube: KubeApply, claim: string, runs: Runs): Promise<void> {
  await kube.custom.patchNamespacedCustomObject(
    {
      ...EXT,
      namespace: kube.namespace,
      plural: CLAIMS,
      name: claim,
      body: {
        metadata: {
          labels: { [LABELS.app]: runs.app },
          annotations: { [RUNS_ANNOTATION]: JSON.stringify(runs) },
        },
      },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch, timeoutOptions(CALL_TIMEOUT_MS)),
  );
}

/** The claim's `runs`, when it has one that reads as such and names the claim's own app. */
export function readRuns(claim: Claim): Runs | undefined {
  const text = claim.metadata?.annotations?.[RUNS_ANNOTATION];
  if (!text) return undefined;
  let value: Partial<Runs>;
  try {
    value = JSON.parse(text) as Partial<Runs>;
  } catch (err) {
    if (err instanceof SyntaxError) return undefined;
    throw err;
  }
  const ok =
    typeof value.app === 'string' &&
    value.app === claim.metadata?.labels?.[LABELS.app] &&
    Number.isInteger(value.version) &&
    Array.isArray(value.allowedHosts) &&
    value.allowedHosts.every((h) => typeof h === 'string');
  return ok ? (value as Runs) : undefined;
}

/**
 * A claim a previous control plane left: taken back when it says what it runs, is bound to a
 * Ready pod, and that pod's agent answers its health check to the claim's own token (so the app
 * runs, and the pod is the one this installation enrolled). Undefined otherwise.
 */
export async function adoptClaim(
  claim: Claim,
  deps: BindDeps,
): Promise<{ sandbox: PodSandbox; runs: Runs } | undefined> {
  const name = claim.metadata?.name;
  const template = claim.metadata?.labels?.[LABELS.template];
  const podIP = claim.status?.sandbox?.podIPs?.[0];
  const runs = readRuns(claim);
  if (!name || !template || !podIP || !runs || !isTrue(claim)) return undefined;
  const sandbox = podSandbox(name, template, podIP, runs.allowedHosts, deps);
  const answer = await callAgent(
    sandbox.control,
    sandbox.token,
    'GET',
    '/health',
    undefined,
    CALL_TIMEOUT_MS,
  ).catch((err: unknown) => {
    deps.log('info', 'a claim left running did not answer', {
      claim: name,
      error: (err as Error).message,
    });
    return undefined;
  });
  if (answer?.status !== 200) {
    sandbox.close();
    return undefined;
  }
  sandbox.phase = 'running';
  try {
    await sandbox.follow();
  } catch (err) {
    deps.log('info', 'a claim left running has no event stream', {
      claim: name,
      error: (err as Error).message,
    });
    sandbox.close();
    return undefined;
  }
  return { sandbox, runs };
}
