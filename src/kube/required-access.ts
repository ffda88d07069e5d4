/** The Kubernetes API surface Slipway uses: data for the access check and the Helm chart's RBAC. */
export type RouteKind = 'httproute' | 'ingress';
export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';

/** What decides which resources Slipway touches. */
export interface AccessNeeds {
  routeKind: RouteKind;
  /** `store.backend: configmap`: the store keeps its records in ConfigMaps. */
  configMapStore: boolean;
}

/** One resource Slipway uses in its namespace and the verbs it calls on it. */
export interface ResourceAccess {
  /** API group; '' is the core group. */
  group: string;
  /** Plural resource name, as RBAC rules name it. */
  resource: string;
  verbs: readonly Verb[];
}

/** A custom resource that must be served, at the version Slipway talks. */
export interface CrdNeed {
  group: string;
  version: string;
  resource: string;
}

const AGENTS = 'agents.x-k8s.io';
const EXTENSIONS = 'extensions.agents.x-k8s.io';
const GATEWAY = 'gateway.networking.k8s.io';
const ALL: readonly Verb[] = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
const WRITE: readonly Verb[] = ['get', 'list', 'create', 'update', 'patch', 'delete'];

/**
 * Every resource and verb Slipway uses in its namespace. This list is the contract the Helm
 * chart's Role is checked against.
 */
export function requiredAccess(needs: AccessNeeds): ResourceAccess[] {
  const list: ResourceAccess[] = [
    { group: EXTENSIONS, resource: 'sandboxtemplates', verbs: ALL },
    { group: EXTENSIONS, resource: 'sandboxwarmpools', verbs: ALL },
    {
      group: EXTENSIONS,
      resource: 'sandboxclaims',
      verbs: ['get', 'list', 'watch', 'create', 'delete'],
    },
    { group: AGENTS, resource: 'sandboxes', verbs: ['get', 'list', 'watch'] },
    { group: '', resource: 'pods', verbs: ['get', 'list', 'watch'] },
    { group: '', resource: 'secrets', verbs: ['get', 'create', 'update', 'delete'] },
    { group: '', resource: 'services', verbs: WRITE },
    { group: 'discovery.k8s.io', resource: 'endpointslices', verbs: WRITE },
    needs.routeKind === 'httproute'
      ? { group: GATEWAY, resource: 'httproutes', verbs: WRITE }
      : { group: 'networking.k8s.io', resource: 'ingresses', verbs: WRITE },
    {
      group: 'networking.k8s.io',
      resource: 'networkpolicies',
      verbs: ['get', 'create', 'update', 'patch'],
    },
  ];
  if (needs.configMapStore) list.push({ group: '', resource: 'configmaps', verbs: ALL });
  return list;
}

/** The custom resources Slipway needs served: agent-sandbox's, and HTTPRoute for that route kind. */
export function requiredCrds(needs: AccessNeeds): CrdNeed[] {
  const list: CrdNeed[] = [
    { group: EXTENSIONS, version: 'v1beta1', resource: 'sandboxtemplates' },
    { group: EXTENSIONS, version: 'v1beta1', resource: 'sandboxwarmpools' },
    { group: EXTENSIONS, version: 'v1beta1', resource: 'sandboxclaims' },
    { group: AGENTS, version: 'v1beta1', resource: 'sandboxes' },
  ];
  if (needs.routeKind === 'httproute') {
    list.push({ group: GATEWAY, version: 'v1', resource: 'httproutes' });
  }
  return list;
}
