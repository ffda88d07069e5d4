import {
  AuthorizationV1Api,
  CustomObjectsApi,
  VersionApi,
  type KubeConfig,
} from '@kubernetes/client-node';
import {
  requiredAccess,
  requiredCrds,
  type AccessNeeds,
  type CrdNeed,
  type Verb,
} from './required-access.js';
import { statusOf, timeoutOptions } from './request-options.js';

/** What `/readyz` shows for the Kubernetes client; `missing` names each gap, one per line. */
export interface AccessStatus {
  ok: boolean;
  detail?: string;
  missing?: string[];
}

export interface AccessCheckOptions extends AccessNeeds {
  /** Per API call. Default 5 s. */
  timeoutMs?: number;
  /** Next check after a passing one. Default 60 s. */
  okIntervalMs?: number;
  /** Next check after a failing one. Default 10 s. */
  failingIntervalMs?: number;
}

/** A verb RBAC refuses on a resource (`what`: plural, dot, group). */
interface Denied {
  verb: Verb;
  what: string;
}

/**
 * Readiness of the Kubernetes client for `/readyz`, whose checks are synchronous: the API server
 * answers, the CRDs are served, and RBAC allows every verb of `requiredAccess` (one
 * SelfSubjectAccessReview each). Runs in the background — at `start()`, then every
 * `failingIntervalMs` while failing and `okIntervalMs` while passing — and `status()` returns the
 * last result.
 */
export class KubeAccessCheck {
  private last: AccessStatus = { ok: false, detail: 'Kubernetes access not checked yet' };
  private running: Promise<AccessStatus> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Bumped by start and stop, so a loop whose check outlived a stop() ends there. */
  private generation = 0;
  private started = false;
  private readonly version: VersionApi;
  private readonly custom: CustomObjectsApi;
  private readonly authz: AuthorizationV1Api;

  constructor(
    kc: KubeConfig,
    private readonly namespace: string,
    private readonly opts: AccessCheckOptions,
  ) {
    this.version = kc.makeApiClient(VersionApi);
    this.custom = kc.makeApiClient(CustomObjectsApi);
    this.authz = kc.makeApiClient(AuthorizationV1Api);
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    void this.loop(++this.generation);
  }

  stop(): void {
    this.started = false;
    this.generation++;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  status(): AccessStatus {
    return this.last;
  }

  /** Checks now (joining a check already under way) and caches the result for `status()`. */
  checkNow(): Promise<AccessStatus> {
    this.running ??= this.check().finally(() => (this.running = undefined));
    return this.running;
  }

  private async loop(generation: number): Promise<void> {
    const result = await this.checkNow();
    if (generation !== this.generation) return;
    const every = result.ok
      ? (this.opts.okIntervalMs ?? 60_000)
      : (this.opts.failingIntervalMs ?? 10_000);
    this.timer = setTimeout(() => void this.loop(generation), every);
    this.timer.unref();
  }

  private async check(): Promise<AccessStatus> {
    const unreachable = await this.reachable();
    if (unreachable) {
      this.last = { ok: false, detail: unreachable, missing: [unreachable] };
      return this.last;
    }
    const [crds, rbac] = await Promise.all([this.crds(), this.rbac()]);
    const denied = rbac.filter((a): a is Denied => typeof a === 'object');
    const problems = [...crds, ...rbac.filter((a): a is string => typeof a === 'string')];
    const line = (verbs: string, what: string) =>
      `RBAC: cannot ${verbs} ${what} in namespace ${this.namespace}`;
    const missing = [...problems, ...denied.map((d) => line(d.verb, d.what))];
    if (missing.length === 0) {
      this.last = { ok: true };
      return this.last;
    }
    // The detail names each resource once with its verbs; `missing` keeps one entry per verb.
    const byResource = new Map<string, Verb[]>();
    for (const d of denied) byResource.set(d.what, [...(byResource.get(d.what) ?? []), d.verb]);
    const grouped = [...byResource].map(([what, verbs]) => line(verbs.join(', '), what));
    this.last = { ok: false, detail: [...problems, ...grouped].join('; '), missing };
    return this.last;
  }

  private get timeoutMs(): number {
    return this.opts.timeoutMs ?? 5_000;
  }

  /** undefined when the API server answers /version; else why not. */
  private async reachable(): Promise<string | undefined> {
    try {
      await this.version.getCode({}, timeoutOptions(this.timeoutMs));
      return undefined;
    } catch (err) {
      const status = statusOf(err);
      if (status === 401) return 'API: the API server refused the credentials (401)';
      if (status !== undefined) return `API: GET /version answered ${status}`;
      return `API: unreachable: ${(err as Error).message}`;
    }
  }

  private async crds(): Promise<string[]> {
    const byGroupVersion = new Map<string, { group: string; version: string; needs: CrdNeed[] }>();
    for (const need of requiredCrds(this.opts)) {
      const key = `${need.group}/${need.version}`;
      const entry = byGroupVersion.get(key) ?? {
        group: need.group,
        version: need.version,
        needs: [],
      };
      entry.needs.push(need);
      byGroupVersion.set(key, entry);
    }
    const lines = await Promise.all(
      [...byGroupVersion.values()].map(async ({ group, version, needs }) => {
        let served: Set<string>;
        try {
          const list = await this.custom.getAPIResources(
            { group, version },
            timeoutOptions(this.timeoutMs),
          );
          served = new Set(list.resources.map((r) => r.name));
        } catch (err) {
          if (statusOf(err) !== 404) {
            return [`CRD: cannot read the ${group}/${version} API: ${failure(err)}`];
          }
          served = new Set();
        }
        return needs
          .filter((n) => !served.has(n.resource))
          .map((n) => `CRD: ${n.resource}.${n.group} (${n.version}) is not served`);
      }),
    );
    return lines.flat();
  }

  /** One answer per verb: allowed (undefined), denied, or why it could not be checked. */
  private async rbac(): Promise<(Denied | string | undefined)[]> {
    // A rule limited to names is asked about each name: a grant on other names does not count.
    const asks = requiredAccess(this.opts).flatMap((r) =>
      r.verbs.flatMap((verb) =>
        (r.resourceNames ?? [undefined]).map((name) => ({ ...r, verb, name })),
      ),
    );
    return mapBounded(asks, 8, async ({ group, resource, verb, name }) => {
      const what = `${group ? `${resource}.${group}` : resource}${name ? `/${name}` : ''}`;
      const attributes = { namespace: this.namespace, group, resource, verb, name };
      try {
        const review = await this.authz.createSelfSubjectAccessReview(
          { body: { spec: { resourceAttributes: attributes } } },
          timeoutOptions(this.timeoutMs),
        );
        return review.status?.allowed ? undefined : { verb, what };
      } catch (err) {
        return `RBAC: could not check ${verb} ${what}: ${failure(err)}`;
      }
    });
  }
}

/** An API answer as its status (the client's message carries the whole response), else the error. */
function failure(err: unknown): string {
  const status = statusOf(err);
  return status === undefined ? (err as Error).message : `answered ${status}`;
}

/** `items.map(fn)` with at most `limit` calls in flight, results in input order. */
async function mapBounded<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>) {
  const out = new Array<R>(items.length);
  // One iterator shared by the workers: each takes the next item when it is free.
  const entries = items.entries();
  const worker = async () => {
    for (const [i, item] of entries) out[i] = await fn(item);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
