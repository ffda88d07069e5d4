import { POD_ENV, POD_PORTS } from '../../agent/pod-settings.js';
import type { Obj } from './kube-object.js';

/** agent-sandbox's API groups (kubernetes-sigs/agent-sandbox v0.5). */
export const EXT = { group: 'extensions.agents.x-k8s.io', version: 'v1beta1' } as const;
export const LABELS = {
  managedBy: 'app.kubernetes.io/managed-by',
  sandbox: 'slipway.dev/sandbox',
  template: 'slipway.dev/template',
  app: 'slipway.dev/app-id',
  instance: 'slipway.dev/instance',
} as const;
export const MANAGED = { [LABELS.managedBy]: 'slipway' };
/** Every object Slipway writes carries it. */
export const SELECTOR = `${LABELS.managedBy}=slipway`;
export const CLAIMS = 'sandboxclaims';
export const POOLS = 'sandboxwarmpools';
/** The Secret holding each template's enroll key (entry = template name). */
export const ENROLL_SECRET = 'slipway-sandbox-enroll';

export interface PodSpecOptions {
  image: string;
  /** The container's command: the agent bundle (node /opt/slipway/agent.mjs in the image). */
  command: string[];
  memoryLimitMB: number;
  cpu: number;
}

/** The object's name for a template's SandboxTemplate and SandboxWarmPool. */
export function poolName(template: string): string {
  return `slipway-${template}`;
}

/**
 * A template's SandboxTemplate: pods running the same in-sandbox agent as the local runtime,
 * locked down (non-root, no privilege escalation, read-only root, no service account token), with
 * the enroll key by reference to a Secret, never in clear in the spec.
 */
export function sandboxTemplate(
  template: string,
  opts: PodSpecOptions,
  /** The egress gate as pods dial it, `address:port` (or `$(VAR)` references the kubelet expands). */
  egressGate: string,
  /**
   * `serviceLinks`: the pod gets the namespace's Service env vars (`<NAME>_SERVICE_HOST`), so a
   * Helm chart, which cannot know the gate's ClusterIP, can name it through them.
   */
  links: { serviceLinks: boolean } = { serviceLinks: false },
): Obj {
  const labels = { ...MANAGED, [LABELS.sandbox]: 'true', [LABELS.template]: template };
  return {
    apiVersion: `${EXT.group}/${EXT.version}`,
    kind: 'SandboxTemplate',
    metadata: { name: poolName(template), labels: { ...MANAGED, [LABELS.template]: template } },
    spec: {
      podTemplate: {
        metadata: { labels },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: links.serviceLinks,
          restartPolicy: 'Never',
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 65532,
            runAsGroup: 65532,
            fsGroup: 65532,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [
            {
              name: 'agent',
              image: opts.image,
              command: opts.command,
              env: [
                { name: POD_ENV.template, value: template },
                {
                  name: POD_ENV.enrollKey,
                  valueFrom: { secretKeyRef: { name: ENROLL_SECRET, key: template } },
                },
                { name: POD_ENV.podIP, valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
                { name: POD_ENV.egressGate, value: egressGate },
              ],
              ports: [
                { name: 'agent', containerPort: POD_PORTS.agent },
                { name: 'http', containerPort: POD_PORTS.public },
              ],
              readinessProbe: {
                httpGet: { path: '/ready', port: POD_PORTS.agent },
                periodSeconds: 1,
              },
              resources: {
                limits: { memory: `${opts.memoryLimitMB}Mi`, cpu: String(opts.cpu) },
                requests: { memory: `${Math.min(128, opts.memoryLimitMB)}Mi`, cpu: '50m' },
              },
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ['ALL'] },
              },
              volumeMounts: [
                { name: 'app', mountPath: '/app' },
                { name: 'tmp', mountPath: '/tmp' },
              ],
            },
          ],
          volumes: [
            { name: 'app', emptyDir: { sizeLimit: `${opts.memoryLimitMB}Mi` } },
            { name: 'tmp', emptyDir: { sizeLimit: `${opts.memoryLimitMB}Mi` } },
          ],
        },
      },
    },
  };
}

/** A template's warm pool, named for `hash`, the hash of the SandboxTemplate its pods come from. */
export function warmPool(template: string, replicas: number, hash: string): Obj {
  return {
    apiVersion: `${EXT.group}/${EXT.version}`,
    kind: 'SandboxWarmPool',
    metadata: {
      name: `${poolName(template)}-${hash}`,
      labels: { ...MANAGED, [LABELS.template]: template },
    },
    spec: { replicas, sandboxTemplateRef: { name: poolName(template) } },
  };
}
