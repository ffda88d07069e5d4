import {
  CoreV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  NetworkingV1Api,
  type KubeConfig,
  type V1Endpoint,
  type V1ObjectMeta,
  type V1OwnerReference,
} from '@kubernetes/client-node';
import {
  APP_ID_LABEL,
  HOST_ANNOTATION,
  INSTANCE_LABEL,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  POD_IP_ANNOTATION,
  ROUTE_ROLE_LABEL,
  appEndpointSlice,
  appRoute,
  appService,
  assertValidAppId,
  assertValidEndpoint,
  hostRoute,
  isDnsName,
  type AppEndpoint,
  type HTTPRoute,
  type RouteOptions,
} from './app-route-objects.js';
import { FIELD_MANAGER, applyOptions, statusOf, timeoutOptions } from './request-options.js';
import { SandboxPods, endpointOf } from './sandbox-pods.js';

export type { AppEndpoint, RouteOptions } from './app-route-objects.js';

export interface AppRoutesOptions extends RouteOptions {
  /** The control plane's Service: it takes every apps host no app route claims. */
  fallback: { serviceName: string; port: number };
  /** Per API call. Default 10 s. */
  timeoutMs?: number;
  /**
   * This installation (`slipway.dev/instance`): its routes carry it, and only routes carrying it
   * are listed or withdrawn, so two installations in one namespace never remove each other's.
   */
  instance?: string;
  /**
   * Watch the namespace's sandbox pods: each app's EndpointSlice then names its pod (targetRef)
   * and follows its conditions (ready, serving, terminating) as they change.
   */
  followPods?: { onDrop(err: unknown): void };
}

/** What `published()` finds for one app. */
export interface PublishedRoute {
  host: string;
  podIP: string;
}

/**
 * The data path of Ready apps (the Knative activator pattern): a Ready app's host goes from the
 * ingress straight to its pod through a Service without selector, an EndpointSlice holding the pod
 * IP, and an HTTPRoute or Ingress for the host. An app without them falls through to the
 * control plane's wildcard route (`ensureFallback`), whose router wakes and holds it.
 * All objects are written with server-side apply (idempotent) and labelled
 * `app.kubernetes.io/managed-by=slipway` and `slipway.dev/app-id=<id>`.
 */
export class AppRoutes {
  private readonly core: CoreV1Api;
  private readonly discovery: DiscoveryV1Api;
  private readonly networking: NetworkingV1Api;
  private readonly custom: CustomObjectsApi;
  private readonly pods: SandboxPods | undefined;
  /** Pod changes are written one after the other, each from the pod's state then. */
  private podWrites: Promise<void> = Promise.resolve();

  constructor(
    kc: KubeConfig,
    private readonly namespace: string,
    private readonly opts: AppRoutesOptions,
  ) {
    if (opts.kind === 'httproute' && !opts.gateway) {
      throw new TypeError('app routes: the httproute kind needs a gateway (parentRef)');
    }
    this.core = kc.makeApiClient(CoreV1Api);
    this.discovery = kc.makeApiClient(DiscoveryV1Api);
    this.networking = kc.makeApiClient(NetworkingV1Api);
    this.custom = kc.makeApiClient(CustomObjectsApi);
    if (opts.followPods) {
      const { onDrop } = opts.followPods;
      this.pods = new SandboxPods(kc, namespace, (ip) => this.podChanged(ip), onDrop);
    }
  }

  /** Starts following the sandbox pods (followPods). */
  async start(): Promise<void> {
    await this.pods?.start();
  }

  async stop(): Promise<void> {
    await this.pods?.stop();
  }

  /** Routes `host` to the pod: Service, then EndpointSlice, then the route (so it never points at nothing). */
  async publish(endpoint: AppEndpoint): Promise<void> {
    assertValidEndpoint(endpoint);
    const { instance } = this.opts;
    const e = instance ? { ...endpoint, instance } : endpoint;
    const body = appService(this.namespace, e);
    const service = await this.core.patchNamespacedService(
      { ...this.target(body.metadata), body },
      applyOptions(this.timeoutMs),
    );
    const owner = ownerRef(service.metadata, 'v1', 'Service');
    const slice = appEndpointSlice(this.namespace, e, owner, endpointOf(this.pods?.get(e.podIP)));
    await this.discovery.patchNamespacedEndpointSlice(
      { ...this.target(slice.metadata), body: slice },
      applyOptions(this.timeoutMs),
    );
    await this.applyRoute(appRoute(this.namespace, e, this.opts, owner));
  }

  /** Removes the app's route, EndpointSlice and Service; nothing there is fine. */
  async withdraw(appId: string): Promise<void> {
    assertValidAppId(appId);
    const selector = `${this.ours},${APP_ID_LABEL}=${appId}`;
    const [routes, slices, services] = await this.list(selector);
    const t = () => timeoutOptions(this.timeoutMs);
    const ns = this.namespace;
    for (const name of routes.map((o) => o.metadata?.name ?? '')) {
      await ignore404(
        this.opts.kind === 'ingress'
          ? this.networking.deleteNamespacedIngress({ name, namespace: ns }, t())
          : this.custom.deleteNamespacedCustomObject({ ...HTTPROUTES, namespace: ns, name }, t()),
      );
    }
    for (const name of slices.map((o) => o.metadata?.name ?? '')) {
      await ignore404(this.discovery.deleteNamespacedEndpointSlice({ name, namespace: ns }, t()));
    }
    for (const name of services.map((o) => o.metadata?.name ?? '')) {
      await ignore404(this.core.deleteNamespacedService({ name, namespace: ns }, t()));
    }
  }

  /** Every app with any of its objects present, for the resync at start (half-written ones too). */
  async published(): Promise<Map<string, PublishedRoute>> {
    const found = new Map<string, PublishedRoute>();
    for (const objects of await this.list(`${this.ours},${APP_ID_LABEL}`)) {
      for (const { metadata } of objects) {
        const id = metadata?.labels?.[APP_ID_LABEL];
        if (!id || found.has(id)) continue;
        found.set(id, {
          host: metadata?.annotations?.[HOST_ANNOTATION] ?? '',
          podIP: metadata?.annotations?.[POD_IP_ANNOTATION] ?? '',
        });
      }
    }
    return found;
  }

  /** The pod at `ip` changed: every EndpointSlice of ours naming it is brought up to date. */
  private podChanged(ip: string): void {
    this.podWrites = this.podWrites.then(() =>
      this.followPod(ip).catch((err: unknown) => this.opts.followPods?.onDrop(err)),
    );
  }

  private async followPod(ip: string): Promise<void> {
    const t = timeoutOptions(this.timeoutMs);
    const q = { namespace: this.namespace, labelSelector: `${this.ours},${APP_ID_LABEL}` };
    const slices = (await this.discovery.listNamespacedEndpointSlice(q, t)).items;
    const want = endpointOf(this.pods?.get(ip));
    for (const slice of slices) {
      const now = slice.endpoints[0];
      if (slice.metadata?.annotations?.[POD_IP_ANNOTATION] !== ip || !now) continue;
      if (sameEndpoint(now, want)) continue;
      const { name, labels, annotations, ownerReferences } = slice.metadata;
      const body = {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name, namespace: this.namespace, labels, annotations, ownerReferences },
        addressType: slice.addressType,
        endpoints: [{ addresses: [ip], ...want }],
        ports: slice.ports,
      };
      await ignore404(
        this.discovery.patchNamespacedEndpointSlice(
          { ...this.target(slice.metadata), body },
          applyOptions(this.timeoutMs),
        ),
      );
    }
  }

  /** `ensureFallbackRoute` with this instance's route kind and fallback Service. */
  ensureFallback(appsDomain: string): Promise<void> {
    return this.applyRoute(fallbackRoute(this.namespace, appsDomain, this.opts));
  }

  /** The selector of this installation's objects. */
  private get ours(): string {
    const instance = this.opts.instance ? `,${INSTANCE_LABEL}=${this.opts.instance}` : '';
    return `${MANAGED_BY_LABEL}=${MANAGED_BY}${instance}`;
  }

  private get timeoutMs(): number {
    return this.opts.timeoutMs ?? 10_000;
  }

  private target(meta: V1ObjectMeta | undefined) {
    return {
      name: meta?.name ?? '',
      namespace: this.namespace,
      fieldManager: FIELD_MANAGER,
      force: true,
    };
  }

  private async applyRoute(route: ReturnType<typeof hostRoute>): Promise<void> {
    const target = { ...this.target(route.metadata), body: route };
    if (route.kind === 'Ingress') {
      await this.networking.patchNamespacedIngress(target, applyOptions(this.timeoutMs));
    } else {
      await this.custom.patchNamespacedCustomObject(
        { ...HTTPROUTES, ...target },
        applyOptions(this.timeoutMs),
      );
    }
  }

  private async list(selector: string): Promise<[Named[], Named[], Named[]]> {
    const q = { namespace: this.namespace, labelSelector: selector };
    const t = () => timeoutOptions(this.timeoutMs);
    const routes =
      this.opts.kind === 'ingress'
        ? this.networking.listNamespacedIngress(q, t()).then((l) => l.items)
        : this.custom
            .listNamespacedCustomObject({ ...HTTPROUTES, ...q }, t())
            .then((l: { items: HTTPRoute[] }) => l.items);
    return Promise.all([
      routes,
      this.discovery.listNamespacedEndpointSlice(q, t()).then((l) => l.items),
      this.core.listNamespacedService(q, t()).then((l) => l.items),
    ]);
  }
}

/**
 * Writes the wildcard route `*.<appsDomain>` → the control plane's Service, so a host no app
 * route claims (an app not Ready, or unknown) reaches the control plane's router.
 *
 * The per-app routes win over it. Gateway API, HTTPRouteSpec.hostnames: "In the event that
 * multiple HTTPRoutes specify intersecting hostnames (e.g. overlapping wildcard matching and exact
 * matching hostnames), precedence must be given to rules from the HTTPRoute with the largest number
 * of: Characters in a matching non-wildcard hostname. Characters in a matching hostname." An exact
 * `<name>.<appsDomain>` has non-wildcard characters and the wildcard has none, so the exact one
 * wins (https://gateway-api.sigs.k8s.io/reference/spec/#httproutespec). The Ingress API defines
 * no precedence between objects; controllers in practice prefer an exact host over a wildcard
 * (ingress-nginx: server_name exact before wildcard), so with `ingress` this rests on the controller.
 */
export async function ensureFallbackRoute(
  kc: KubeConfig,
  namespace: string,
  opts: AppRoutesOptions & { appsDomain: string },
): Promise<void> {
  await new AppRoutes(kc, namespace, opts).ensureFallback(opts.appsDomain);
}

/** Any listed object: only its metadata is read. */
type Named = { metadata?: V1ObjectMeta };

const HTTPROUTES = { group: 'gateway.networking.k8s.io', version: 'v1', plural: 'httproutes' };

function fallbackRoute(namespace: string, appsDomain: string, opts: AppRoutesOptions) {
  if (!isDnsName(appsDomain)) {
    throw new TypeError(`app routes: apps domain "${appsDomain}" is not a valid DNS name`);
  }
  const { serviceName, port } = opts.fallback;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new RangeError(`app routes: fallback port ${port} is out of range (1-65535)`);
  }
  const metadata = {
    name: 'slipway-apps-fallback',
    namespace,
    labels: { [MANAGED_BY_LABEL]: MANAGED_BY, [ROUTE_ROLE_LABEL]: 'fallback' },
  };
  return hostRoute(metadata, `*.${appsDomain}`, { name: serviceName, port }, opts);
}

function ownerRef(
  meta: V1ObjectMeta | undefined,
  apiVersion: string,
  kind: string,
): V1OwnerReference {
  return { apiVersion, kind, name: meta?.name ?? '', uid: meta?.uid ?? '' };
}

function sameEndpoint(now: V1Endpoint, want: ReturnType<typeof endpointOf>): boolean {
  const c = now.conditions ?? {};
  return (
    c.ready === want.conditions.ready &&
    c.serving === want.conditions.serving &&
    c.terminating === want.conditions.terminating &&
    now.targetRef?.uid === want.targetRef?.uid
  );
}

async function ignore404(call: Promise<unknown>): Promise<void> {
  try {
    await call;
  } catch (err) {
    if (statusOf(err) !== 404) throw err;
  }
}
