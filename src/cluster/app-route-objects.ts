import { createHash } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import type {
  V1EndpointSlice,
  V1Ingress,
  V1OwnerReference,
  V1Service,
} from '@kubernetes/client-node';
import { APP_NAME, APP_NAME_MAX } from '../sources/app-name.js';
import type { RouteKind } from './required-access.js';
import type { PodEndpoint } from './sandbox-pods.js';

/** How an app's host reaches a Service: a Gateway API HTTPRoute or an Ingress. */
export interface RouteOptions {
  kind: Exclude<RouteKind, 'none'>;
  /** The Gateway an HTTPRoute attaches to (its parentRef); required for `httproute`. */
  gateway?: { name: string; namespace?: string; sectionName?: string };
  ingressClassName?: string;
}

/** A Ready app's pod, to be reached at `host` directly. */
export interface AppEndpoint {
  appId: string;
  appName: string;
  host: string;
  podIP: string;
  port: number;
  /** The installation that writes the route (`slipway.dev/instance`): another one leaves it be. */
  instance?: string;
}

/** The gateway.networking.k8s.io/v1 HTTPRoute fields Slipway writes. */
export interface HTTPRoute {
  apiVersion: 'gateway.networking.k8s.io/v1';
  kind: 'HTTPRoute';
  metadata: V1Service['metadata'];
  spec: {
    parentRefs: {
      group: string;
      kind: string;
      name: string;
      namespace?: string;
      sectionName?: string;
    }[];
    hostnames: string[];
    rules: { backendRefs: { name: string; port: number }[] }[];
  };
}

export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'slipway';
export const APP_ID_LABEL = 'slipway.dev/app-id';
export const ROUTE_ROLE_LABEL = 'slipway.dev/route';
export const INSTANCE_LABEL = 'slipway.dev/instance';
export const POD_IP_ANNOTATION = 'slipway.dev/pod-ip';
export const HOST_ANNOTATION = 'slipway.dev/host';
/** The port of every per-app Service; the EndpointSlice carries the pod's own port. */
export const SERVICE_PORT = 80;

/** Addresses the API server refuses in an EndpointSlice (endpoint address validation). */
const NOT_ROUTABLE = new BlockList();
NOT_ROUTABLE.addSubnet('127.0.0.0', 8, 'ipv4');
NOT_ROUTABLE.addSubnet('169.254.0.0', 16, 'ipv4');
NOT_ROUTABLE.addSubnet('224.0.0.0', 24, 'ipv4');
NOT_ROUTABLE.addAddress('0.0.0.0', 'ipv4');
NOT_ROUTABLE.addAddress('::1', 'ipv6');
NOT_ROUTABLE.addSubnet('fe80::', 10, 'ipv6');
NOT_ROUTABLE.addSubnet('ff02::', 10, 'ipv6');
NOT_ROUTABLE.addAddress('::', 'ipv6');

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const LABEL_VALUE = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** True for a lower-case DNS name (RFC 1123 subdomain) that is not an IP address. */
export function isDnsName(host: string): boolean {
  return host.length <= 253 && isIP(host) === 0 && host.split('.').every((l) => DNS_LABEL.test(l));
}

/** Refuses what the API server would refuse later, or route somewhere unintended. */
export function assertValidEndpoint(e: AppEndpoint): void {
  assertValidAppId(e.appId);
  if (!APP_NAME.test(e.appName) || e.appName.length > APP_NAME_MAX) {
    throw new TypeError(`app route: app name "${e.appName}" is not a DNS label`);
  }
  if (!isDnsName(e.host)) {
    throw new TypeError(
      `app route: host "${e.host}" is not a valid DNS name (lower-case labels of letters, digits and "-", at most 253 characters, no wildcard or IP address)`,
    );
  }
  const family = isIP(e.podIP);
  if (family === 0) throw new TypeError(`app route: pod IP "${e.podIP}" is not an IP address`);
  if (NOT_ROUTABLE.check(e.podIP, family === 6 ? 'ipv6' : 'ipv4')) {
    throw new TypeError(
      `app route: pod IP ${e.podIP} is loopback, link-local or unspecified; an EndpointSlice cannot hold it`,
    );
  }
  if (!Number.isInteger(e.port) || e.port < 1 || e.port > 65535) {
    throw new RangeError(`app route: port ${e.port} is out of range (1-65535)`);
  }
}

export function assertValidAppId(appId: string): void {
  if (!LABEL_VALUE.test(appId)) {
    throw new TypeError(`app route: app id "${appId}" is not a valid Kubernetes label value`);
  }
}

/**
 * The name of an app's Service, EndpointSlice and route: `slipway-app-<name>`, a DNS-1035 label
 * (Service names must start with a letter); a name too long for 63 characters is cut and given a
 * hash suffix, so two long names never collide.
 */
export function appObjectName(appName: string): string {
  const name = `slipway-app-${appName}`;
  if (name.length <= 63) return name;
  const hash = createHash('sha256').update(appName).digest('hex').slice(0, 8);
  return `${name.slice(0, 54).replace(/-+$/, '')}-${hash}`;
}

function appMetadata(namespace: string, e: AppEndpoint) {
  return {
    name: appObjectName(e.appName),
    namespace,
    labels: {
      [MANAGED_BY_LABEL]: MANAGED_BY,
      [APP_ID_LABEL]: e.appId,
      ...(e.instance ? { [INSTANCE_LABEL]: e.instance } : {}),
    },
    annotations: { [POD_IP_ANNOTATION]: e.podIP, [HOST_ANNOTATION]: e.host },
  };
}

/** A Service without selector: its endpoints are the EndpointSlice Slipway writes. */
export function appService(namespace: string, e: AppEndpoint): V1Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: appMetadata(namespace, e),
    spec: { ports: [{ name: 'http', protocol: 'TCP', port: SERVICE_PORT, targetPort: e.port }] },
  };
}

/** The app pod's address behind its Service; `owner` (the Service) lets GC collect a leftover. */
export function appEndpointSlice(
  namespace: string,
  e: AppEndpoint,
  owner: V1OwnerReference,
  /** The pod's conditions and reference (sandbox-pods.ts); unknown: ready. */
  pod: PodEndpoint = { conditions: { ready: true } },
): V1EndpointSlice {
  const meta = appMetadata(namespace, e);
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      ...meta,
      labels: {
        ...meta.labels,
        'kubernetes.io/service-name': meta.name,
        // Not the EndpointSlice controller's: it leaves slices with another manager alone.
        'endpointslice.kubernetes.io/managed-by': 'slipway.dev',
      },
      ownerReferences: [owner],
    },
    addressType: isIP(e.podIP) === 6 ? 'IPv6' : 'IPv4',
    endpoints: [{ addresses: [e.podIP], ...pod }],
    ports: [{ name: 'http', protocol: 'TCP', port: e.port }],
  };
}

/** The route for an app's host to its Service. */
export function appRoute(
  namespace: string,
  e: AppEndpoint,
  opts: RouteOptions,
  owner: V1OwnerReference,
): HTTPRoute | V1Ingress {
  const meta = { ...appMetadata(namespace, e), ownerReferences: [owner] };
  return hostRoute(meta, e.host, { name: meta.name, port: SERVICE_PORT }, opts);
}

/** An HTTPRoute or Ingress sending `host` (exact or `*.` wildcard) to a Service port. */
export function hostRoute(
  metadata: NonNullable<V1Service['metadata']>,
  host: string,
  backend: { name: string; port: number },
  opts: RouteOptions,
): HTTPRoute | V1Ingress {
  if (opts.kind === 'ingress') {
    return {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata,
      spec: {
        ...(opts.ingressClassName ? { ingressClassName: opts.ingressClassName } : {}),
        rules: [
          {
            host,
            http: {
              paths: [
                {
                  path: '/',
                  pathType: 'Prefix',
                  backend: { service: { name: backend.name, port: { number: backend.port } } },
                },
              ],
            },
          },
        ],
      },
    };
  }
  if (!opts.gateway) throw new TypeError('app route: an HTTPRoute needs a gateway (parentRef)');
  const { name, namespace, sectionName } = opts.gateway;
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata,
    spec: {
      parentRefs: [
        {
          group: 'gateway.networking.k8s.io',
          kind: 'Gateway',
          name,
          ...(namespace ? { namespace } : {}),
          ...(sectionName ? { sectionName } : {}),
        },
      ],
      hostnames: [host],
      rules: [{ backendRefs: [{ name: backend.name, port: backend.port }] }],
    },
  };
}
