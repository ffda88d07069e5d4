/** The Kubernetes API surface Slipway uses: data for the access check and the Helm chart's RBAC. */
/** `none`: no direct routes, every visitor through the control plane. */
export type RouteKind = 'httproute' | 'ingress' | 'none';
export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';

/** What decides which resources Slipway touches. */
export interface AccessNeeds {
  routeKind: RouteKind;
  /** `store.backend: configmap`: the store keeps its records in ConfigMaps. */
  configMapStore: boolean;
  /**
   * `runtime.kubernetes.networkPolicy.enabled`: the runtime writes the sandbox NetworkPolicy
   * itself. The Helm chart renders that policy instead and turns this off, so its Role has no
   * networkpolicies rule.
   */
  networkPolicy: boolean;
  /**
   * `runtime.kubernetes.sandboxObjects.managedBy`: `slipway` (the default) writes the
   * SandboxTemplates, SandboxWarmPools and the enroll Secret; with `chart` the Helm release owns
   * them and Slipway only reads the pools and the Secret.
   */
  sandboxObjects?: 'slipway' | 'chart';
  /** The enroll Secret, the one Secret Slipway reads (default `slipway-sandbox-enroll`). */
  enrollSecret?: string;
  /** `runtime.kubernetes.leaderElection.enabled`: the replicas' Lease, by its name. */
  leaderLease?: string;
}

/** One resource Slipway uses in its namespace and the verbs it calls on it. */
export interface ResourceAccess {
  /** API group; '' is the core group. */
  group: string;
  /** Plural resource name, as RBAC rules name it. */
  resource: string;
  verbs: readonly Verb[];
  /**
   * Only these objects (RBAC `resourceNames`). `create` cannot be limited so (the name is not in
   * the request's URL) and neither can names made at run time (the configmap store's records):
   * those rules hold no names.
   */
  resourceNames?: readonly string[];
}

/** A custom resource that must be served, at the version Slipway talks. */
export interface CrdNeed {
  group: string;
  version: string;
  resource: string;
}

const EXTENSIONS = 'extensions.agents.x-k8s.io';
const ENROLL_SECRET = 'slipway-sandbox-enroll';
const GATEWAY = 'gateway.networking.k8s.io';
const COORDINATION = 'coordination.k8s.io';
/** Server-side apply: a patch, which creates the object when it is missing. */
const APPLIED: readonly Verb[] = ['list', 'create', 'patch', 'delete'];

/**
 * Every resource and verb Slipway calls in its namespace, and no more: the runtime (templates,
 * pools, claims, the enroll Secret, the egress Service's address), the data path (Services,
 * EndpointSlices, routes, the sandbox NetworkPolicy when it writes it), the replicas' Lease and the
 * configmap store. The Helm chart's
 * Role is checked against this list.
 */
export function requiredAccess(needs: AccessNeeds): ResourceAccess[] {
  const ownsSandboxes = needs.sandboxObjects !== 'chart';
  const sandboxes: ResourceAccess[] = ownsSandboxes
    ? [
        { group: EXTENSIONS, resource: 'sandboxtemplates', verbs: ['get', 'create', 'update'] },
        {
          group: EXTENSIONS,
          resource: 'sandboxwarmpools',
          verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'],
        },
      ]
    : [{ group: EXTENSIONS, resource: 'sandboxwarmpools', verbs: ['list', 'watch'] }];
  const list: ResourceAccess[] = [
    ...sandboxes,
    // `patch`: what a claim's pod runs (app, version, egress), for the next start to adopt it.
    {
      group: EXTENSIONS,
      resource: 'sandboxclaims',
      verbs: ['list', 'watch', 'create', 'patch', 'delete'],
    },
    // The enroll Secret only: never the API key, S3 credentials or TLS key beside it.
    ...(ownsSandboxes ? [{ group: '', resource: 'secrets', verbs: ['create'] } as const] : []),
    {
      group: '',
      resource: 'secrets',
      verbs: ownsSandboxes ? ['get', 'update'] : ['get'],
      resourceNames: [needs.enrollSecret ?? ENROLL_SECRET],
    },
    // `get`: the egress Service's ClusterIP, which Slipway writes into its pods' env.
    { group: '', resource: 'services', verbs: ownsSandboxes ? ['get', ...APPLIED] : APPLIED },
    { group: 'discovery.k8s.io', resource: 'endpointslices', verbs: APPLIED },
  ];
  if (needs.networkPolicy) {
    list.push({
      group: 'networking.k8s.io',
      resource: 'networkpolicies',
      verbs: ['create', 'patch'],
    });
  }
  if (needs.routeKind !== 'none') {
    // Each app's EndpointSlice follows its sandbox pod's conditions (sandbox-pods.ts).
    list.push({ group: '', resource: 'pods', verbs: ['list', 'watch'] });
  }
  if (needs.routeKind === 'httproute') {
    list.push({ group: GATEWAY, resource: 'httproutes', verbs: APPLIED });
  } else if (needs.routeKind === 'ingress') {
    list.push({ group: 'networking.k8s.io', resource: 'ingresses', verbs: APPLIED });
  }
  if (needs.leaderLease !== undefined) {
    // The Lease is made by the first replica (`create` cannot be limited by name), then read and
    // renewed by name.
    list.push(
      { group: COORDINATION, resource: 'leases', verbs: ['create'] },
      {
        group: COORDINATION,
        resource: 'leases',
        verbs: ['get', 'update'],
        resourceNames: [needs.leaderLease],
      },
    );
  }
  if (needs.configMapStore) {
    list.push({
      group: '',
      resource: 'configmaps',
      verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'],
    });
  }
  return list;
}

/** The custom resources Slipway needs served: agent-sandbox's, and HTTPRoute for that route kind. */
export function requiredCrds(needs: AccessNeeds): CrdNeed[] {
  const list: CrdNeed[] = [
    { group: EXTENSIONS, version: 'v1beta1', resource: 'sandboxtemplates' },
    { group: EXTENSIONS, version: 'v1beta1', resource: 'sandboxwarmpools' },
    { group: EXTENSIONS, version: 'v1beta1', resource: 'sandboxclaims' },
  ];
  if (needs.routeKind === 'httproute') {
    list.push({ group: GATEWAY, version: 'v1', resource: 'httproutes' });
  }
  return list;
}
