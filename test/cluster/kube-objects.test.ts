// The pure parts of src/cluster (names, validation, the RBAC list, the policy object); the same
// modules against a real API server are in test/k8s/kube-parts.k8s.ts.
import { describe, expect, it } from 'vitest';
import {
  appObjectName,
  assertValidEndpoint,
  isDnsName,
} from '../../src/cluster/app-route-objects.js';
import { requiredAccess, requiredCrds } from '../../src/cluster/required-access.js';
import { sandboxNetworkPolicy } from '../../src/cluster/sandbox-network-policy.js';

describe('app route names and validation', () => {
  it('names objects slipway-app-<name>, cutting long names with a hash so they never collide', () => {
    expect(appObjectName('hello')).toBe('slipway-app-hello');
    const a = appObjectName(`${'a'.repeat(50)}-one`);
    const b = appObjectName(`${'a'.repeat(50)}-two`);
    for (const name of [a, b]) {
      expect(name.length).toBeLessThanOrEqual(63);
      expect(name).toMatch(/^[a-z]([-a-z0-9]*[a-z0-9])?$/);
    }
    expect(a).not.toBe(b);
  });

  it('takes lower-case DNS names only', () => {
    for (const ok of ['a.b', 'hello.apps.example.com', 'x-1.y']) expect(isDnsName(ok)).toBe(true);
    for (const bad of [
      '',
      'A.b',
      '*.b',
      'a..b',
      '-a.b',
      'a_b.c',
      '10.0.0.1',
      `${'x'.repeat(64)}.c`,
    ]) {
      expect(isDnsName(bad)).toBe(false);
    }
  });

  it('refuses pod IPs an EndpointSlice cannot hold, bad ports, ids and names', () => {
    const ok = { appId: 'a', appName: 'a', host: 'a.example.com', podIP: '10.1.2.3', port: 8080 };
    expect(() => assertValidEndpoint(ok)).not.toThrow();
    expect(() => assertValidEndpoint({ ...ok, podIP: 'fd00::1' })).not.toThrow();
    for (const podIP of [
      '127.0.0.1',
      '::1',
      '169.254.169.254',
      'fe80::1',
      '0.0.0.0',
      '224.0.0.1',
    ]) {
      expect(() => assertValidEndpoint({ ...ok, podIP })).toThrow(/loopback, link-local/);
    }
    expect(() => assertValidEndpoint({ ...ok, port: 65536 })).toThrow(RangeError);
    expect(() => assertValidEndpoint({ ...ok, appId: '-x' })).toThrow(/label value/);
    expect(() => assertValidEndpoint({ ...ok, appName: 'Hello' })).toThrow(/not a DNS label/);
  });
});

describe('requiredAccess', () => {
  it('names the route resource of the route kind, and configmaps only for the configmap store', () => {
    const names = (routeKind: 'httproute' | 'ingress', configMapStore: boolean) =>
      requiredAccess({ routeKind, configMapStore, networkPolicy: true }).map((r) => r.resource);
    expect(names('httproute', false)).toContain('httproutes');
    expect(names('httproute', false)).not.toContain('ingresses');
    expect(names('ingress', false)).toContain('ingresses');
    expect(names('ingress', false)).not.toContain('configmaps');
    expect(names('ingress', true)).toContain('configmaps');
    const crds = (routeKind: 'httproute' | 'ingress') =>
      requiredCrds({ routeKind, configMapStore: false, networkPolicy: true }).map(
        (c) => c.resource,
      );
    expect(crds('httproute')).toContain('httproutes');
    expect(crds('ingress')).not.toContain('httproutes');
  });

  it('names networkpolicies only when the runtime writes the sandbox policy itself', () => {
    const rule = (networkPolicy: boolean) =>
      requiredAccess({ routeKind: 'none', configMapStore: false, networkPolicy }).find(
        (r) => r.resource === 'networkpolicies',
      );
    expect(rule(true)).toEqual({
      group: 'networking.k8s.io',
      resource: 'networkpolicies',
      verbs: ['create', 'patch'],
    });
    expect(rule(false)).toBeUndefined();
  });

  it('names the leader Lease only with leader election: create, then get and update by its name', () => {
    const leases = (leaderLease?: string) =>
      requiredAccess({
        routeKind: 'none',
        configMapStore: true,
        networkPolicy: false,
        ...(leaderLease ? { leaderLease } : {}),
      }).filter((r) => r.resource === 'leases');
    expect(leases()).toEqual([]);
    expect(leases('prod-leader')).toEqual([
      { group: 'coordination.k8s.io', resource: 'leases', verbs: ['create'] },
      {
        group: 'coordination.k8s.io',
        resource: 'leases',
        verbs: ['get', 'update'],
        resourceNames: ['prod-leader'],
      },
    ]);
  });
});

describe('sandboxNetworkPolicy', () => {
  const opts = {
    sandboxSelector: { 'slipway.dev/sandbox': 'true' },
    controlPlaneSelector: { 'app.kubernetes.io/name': 'slipway' },
    egressGatePort: 3128,
    agentPort: 9090,
    appPort: 8080,
  };

  it('allows egress only to the control plane on the gate port', () => {
    const np = sandboxNetworkPolicy('ns', opts);
    expect(np.spec.egress).toEqual([
      {
        to: [{ podSelector: { matchLabels: opts.controlPlaneSelector } }],
        ports: [{ protocol: 'TCP', port: 3128 }],
      },
    ]);
    expect(np.spec.ingress).toHaveLength(1);
  });

  it('refuses selectors that select every pod or sandboxes as the control plane', () => {
    expect(() => sandboxNetworkPolicy('ns', { ...opts, controlPlaneSelector: {} })).toThrow(
      /empty selector/,
    );
    expect(() =>
      sandboxNetworkPolicy('ns', {
        ...opts,
        sandboxSelector: { ...opts.sandboxSelector, ...opts.controlPlaneSelector },
      }),
    ).toThrow(/matches sandbox pods/);
    expect(() => sandboxNetworkPolicy('ns', { ...opts, appPort: 0 })).toThrow(RangeError);
  });
});
