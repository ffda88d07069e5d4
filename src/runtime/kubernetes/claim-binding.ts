import { POD_PORTS } from '../../agent/pod-settings.js';
import { createEgressGate } from '../egress/egress-gate.js';
import type { EgressLimits } from '../egress/egress-limits.js';
import { EgressRules } from '../egress/egress-rules.js';
import { RuntimeError } from '../runtime.js';
import { callAgent } from './agent-client.js';
import { isTrue, type ObjectWatch, type WatchedObject } from './claim-watch.js';
import { apiErrorText, type KubeApply } from './kube-apply.js';
import { PodSandbox } from './pod-sandbox.js';
import { CLAIMS, EXT, LABELS, MANAGED, poolName } from './sandbox-template.js';
import type { Log } from '../../logging.js';

export type Claim = WatchedObject & {
  status?: WatchedObject['status'] & { sandbox?: { name?: string; podIPs?: string[] } };
};

export interface BindDeps {
  kube: KubeApply;
  claims: ObjectWatch<Claim>;
  /** Each template's warm pool now. */
  poolOf: Map<string, string>;
  enrollKeys: Record<string, string>;
  /** This installation's `slipway.dev/instance` label. */
  instance: string;
  /** Each claim's pod token (the same in the next process: it adopts the pod with it). */
  tokenFor(claim: string): string;
  claimTimeoutMs: number;
  allowPrivate: string[];
  egressLimits: EgressLimits;
  log: Log;
}

const ENROLL_TIMEOUT_MS = 5_000;

/**
 * One sandbox: a SandboxClaim against the template's warm pool, bound to a Ready pod within the
 * claim timeout (a transient RuntimeError otherwise: the app machine retries), then the pod
 * enrolled with a token of its own and its event stream followed. A claim that fails on the way is
 * deleted, so nothing is left holding a pod. `appId` undefined: a claim made ahead of any deploy
 * (claim-reserve.ts); recordRuns labels it with its app later.
 */
export async function bindClaim(
  template: string,
  appId: string | undefined,
  deps: BindDeps,
): Promise<PodSandbox> {
  const { kube, claims } = deps;
  const created = await kube
    .createExt(CLAIMS, {
      apiVersion: `${EXT.group}/${EXT.version}`,
      kind: 'SandboxClaim',
      metadata: {
        generateName: `${poolName(template)}-`,
        labels: {
          ...MANAGED,
          [LABELS.instance]: deps.instance,
          [LABELS.template]: template,
          ...(appId === undefined ? {} : { [LABELS.app]: appId }),
        },
      },
      spec: { warmPoolRef: { name: deps.poolOf.get(template) ?? poolName(template) } },
    })
    .catch((err: unknown) => {
      throw new RuntimeError(`cannot create a sandbox claim: ${apiErrorText(err)}`, true);
    });
  const name = created.metadata.name;
  try {
    const podIP = await claims
      .waitFor(
        () => {
          const claim = claims.get(name, kube.namespace);
          const ip = claim?.status?.sandbox?.podIPs?.[0];
          return claim?.status?.sandbox?.name && ip && isTrue(claim) ? ip : undefined;
        },
        deps.claimTimeoutMs,
        `claim ${name} bound to a Ready ${template} sandbox`,
      )
      .catch((err: unknown) => {
        throw new RuntimeError(`no warm ${template} sandbox: ${(err as Error).message}`, true);
      });
    const token = deps.tokenFor(name);
    await enroll(podIP, deps.enrollKeys[template] ?? '', token, name);
    const sandbox = podSandbox(name, template, podIP, [], deps);
    await sandbox.follow();
    return sandbox;
  } catch (err) {
    await kube
      .deleteExt(CLAIMS, name)
      .catch((e: unknown) =>
        deps.log('info', 'cannot delete a failed claim', { claim: name, error: apiErrorText(e) }),
      );
    throw err;
  }
}

/** The sandbox of a bound claim, its egress gate open to `allowedHosts` only. */
export function podSandbox(
  name: string,
  template: string,
  podIP: string,
  allowedHosts: string[],
  deps: Pick<BindDeps, 'tokenFor' | 'allowPrivate' | 'egressLimits' | 'log'>,
): PodSandbox {
  const rules = new EgressRules({ allowedHosts, allowPrivate: deps.allowPrivate }, deps.log);
  const gate = createEgressGate({ rules, limits: deps.egressLimits, log: deps.log });
  return new PodSandbox(name, template, podIP, deps.tokenFor(name), { rules, gate });
}

/** The pod's one enroll: the template's key authorises it, the token is this sandbox's own. */
async function enroll(podIP: string, key: string, token: string, claim: string): Promise<void> {
  const answer = await callAgent(
    { host: podIP, port: POD_PORTS.agent },
    key,
    'POST',
    '/enroll',
    { token },
    ENROLL_TIMEOUT_MS,
  ).catch((err: unknown) => {
    throw new RuntimeError(`sandbox ${claim} did not enroll: ${(err as Error).message}`, true);
  });
  if (answer.status !== 200) {
    throw new RuntimeError(`sandbox ${claim} refused to enroll (${answer.status})`, true);
  }
}
