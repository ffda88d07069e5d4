import { z } from 'zod';
import { parseDuration } from './duration.js';

/** A Go-style duration string (`30s`, `1h30m`), kept as text and read with `durationMs`. */
const duration = z
  .string()
  .refine((v) => parseDuration(v) !== undefined, 'must be a duration such as 30s, 5m or 1h30m')
  .refine((v) => (parseDuration(v) ?? 0) >= 0, 'must not be negative');

/** A web origin exactly as a browser sends it in `Origin`, e.g. `https://app.example.com:8443`. */
const origin = z
  .string()
  .refine(
    (v) => URL.canParse(v) && /^https?:$/.test(new URL(v).protocol) && new URL(v).origin === v,
    'must be an origin such as https://app.example.com: http(s), host and port only, lower case, no path or trailing slash',
  );

const apiKeyEntry = z.strictObject({
  key: z.string().min(1, 'must not be empty'),
  name: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/, 'must be 1-63 letters, digits, ".", "_" or "-"'),
  scopes: z.array(z.string()).default([]),
  role: z.enum(['admin', 'user']).default('user'),
  department: z.string().optional(),
});

export const configSchema = z.strictObject({
  server: z
    .strictObject({
      listen: z
        .string()
        .regex(/^(\[[0-9a-fA-F:.]+\]|[^:\s]+):\d{1,5}$/, 'must be host:port')
        .default('127.0.0.1:8080'),
      baseURL: z.url({ message: 'must be an absolute http(s) URL' }).optional(),
      appsDomain: z.string().optional(),
      dataDir: z.string().min(1).default('./data'),
      logLevel: z
        .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
        .default('info'),
      bodyLimitBytes: z
        .number()
        .int()
        .positive()
        .default(1024 * 1024),
      /** Time a client has to send a whole request head, however it trickles (slowloris). */
      headersTimeout: duration.default('10s'),
      /** Connections per client address still owing a complete request head; more are closed. */
      maxPendingConnectionsPerAddress: z.number().int().positive().default(64),
      /**
       * On SIGTERM/SIGINT, how long requests in flight (a deploy waiting for its app) may take to
       * finish before they are cut and the process exits.
       */
      shutdownTimeout: duration.default('30s'),
      /**
       * Apps keep serving while this process stops, crashes or is replaced: running apps'
       * sandboxes outlive it and the next start adopts them. false: they stop with the server.
       */
      restartContinuity: z.boolean().default(true),
      /**
       * What carries visitors to Ready public apps (local runtime): `native`, HAProxy straight to
       * the app's socket, the control plane only for the rest; `node`, the control plane's own
       * router for every request; `auto`, native when HAProxy is installed and TLS is off.
       */
      dataPath: z.enum(['auto', 'native', 'node']).default('auto'),
      /** Apps the native front door routes at once (each takes one slot, two while it switches). */
      nativeSlots: z.number().int().min(2).max(20_000).default(1024),
      /**
       * HAProxy's threads on the native data path; `auto`: half the host's cores, at least one
       * (it costs about what a small app does per request, and the apps need the rest).
       */
      nativeThreads: z.union([z.literal('auto'), z.number().int().min(1).max(64)]).default('auto'),
    })
    .prefault({}),
  auth: z
    .strictObject({
      enabled: z.boolean().default(true),
      mode: z.string().default('apikey'),
      devInsecure: z.boolean().default(false),
      identityCacheTTL: duration.default('30s'),
      apiKeys: z.array(apiKeyEntry).default([]),
      oidc: z
        .strictObject({
          issuer: z.string().optional(),
          audience: z.string().optional(),
          jwksURL: z.string().optional(),
          usernameClaim: z.string().default('preferred_username'),
          emailClaim: z.string().default('email'),
          roleClaim: z.string().default('roles'),
          adminRole: z.string().default('admin'),
          scopes: z.array(z.string()).default(['openid', 'profile', 'email']),
          algorithms: z.array(z.string()).default(['RS256', 'ES256', 'PS256', 'EdDSA']),
          /** The dashboard's sign-in: a public client (PKCE, no secret), redirect URI `<baseURL>/`. */
          dashboardClientId: z.string().min(1).optional(),
        })
        .prefault({}),
      oauth: z
        .strictObject({
          trustedProxies: z.array(z.string()).default(['127.0.0.1', '::1']),
          userHeader: z.string().default('x-forwarded-user'),
          /** Comma-separated groups the proxy asserts for the user (e.g. `X-Forwarded-Groups`). */
          groupsHeader: z.string().default('x-forwarded-groups'),
          /** When set, the proxy's groups decide the role: this group is admin, any other user. */
          adminGroup: z.string().min(1).optional(),
        })
        .prefault({}),
      tls: z
        .strictObject({
          enabled: z.boolean().default(false),
          certFile: z.string().optional(),
          keyFile: z.string().optional(),
          autoTLS: z.boolean().default(false),
        })
        .prefault({}),
    })
    .prefault({}),
  limits: z
    .strictObject({
      maxConcurrentLogStreamsPerUser: z.number().int().default(10),
      /** Open log and event streams across all users; `<= 0` means the default. */
      maxStreams: z.number().int().default(1000),
      maxSourceBytes: z
        .number()
        .int()
        .positive()
        .default(50 * 1024 * 1024),
      /** Apps one non-admin owner may have; 0 means no limit. Admins have none. */
      maxAppsPerOwner: z.number().int().nonnegative().default(10),
      /**
       * Sandbox memory one non-admin owner's apps may hold, `runtime.memoryLimitMB` per app; 0
       * means no limit. Admins have none.
       */
      maxSandboxMemoryMBPerOwner: z.number().int().nonnegative().default(4096),
      maxAppsPerDepartment: z.number().int().nonnegative().default(0),
    })
    .prefault({}),
  mcp: z
    .strictObject({
      /**
       * Origins of browser-based MCP clients allowed to call /mcp (CORS); any other Origin is
       * refused there. Written as a browser sends them: scheme, host and port only.
       */
      allowedOrigins: z.array(origin).default([]),
    })
    .prefault({}),
  /** The cluster the kubernetes runtime and the configmap store talk to. */
  kubernetes: z
    .strictObject({
      /** Where Slipway's objects (claims, sandbox templates, configmaps, routes) live. */
      namespace: z
        .string()
        .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'must be a Kubernetes namespace name')
        .default('slipway'),
      /**
       * A kubeconfig file; unset: the pod's service account when running in a cluster, else the
       * default kubeconfig (`KUBECONFIG` or ~/.kube/config).
       */
      kubeconfig: z.string().min(1).optional(),
    })
    .prefault({}),
  apps: z
    .strictObject({
      /**
       * The access of a new app deployed without `access`: `private` apps answer only their owner's
       * (or an admin's) bearer token and visitors holding a share link's grant.
       */
      defaultAccess: z.enum(['public', 'private']).default('public'),
    })
    .prefault({}),
  releases: z
    .strictObject({
      /**
       * After a new release goes live, how long the one it replaced stays running, unrouted: a new
       * release that crashes meanwhile hands traffic straight back to it. 0: no window.
       */
      stabilityWindow: duration.default('10s'),
    })
    .prefault({}),
  /**
   * Where source tarballs live (spec §4 /internal/sources): `served` on the data dir, served to the
   * agents by the control plane; `s3` in an S3-compatible bucket, pulled by the agents through
   * pre-signed URLs. Credentials come from the SDK's default chain (AWS_ACCESS_KEY_ID and
   * AWS_SECRET_ACCESS_KEY, a profile, or the pod's role), never from this file.
   */
  sources: z
    .strictObject({
      backend: z.enum(['served', 's3']).default('served'),
      /**
       * How long a blob the orphan sweep took stays in `<dataDir>/quarantine` before it is
       * deleted: the window to undo a sweep (e.g. after restoring an older database).
       */
      quarantineRetention: duration.default('168h'),
      s3: z
        .strictObject({
          /** An S3-compatible endpoint (MinIO, Ceph); unset: AWS's own for the region. */
          endpoint: z
            .url({ protocol: /^https?$/, message: 'must be an absolute http(s) URL' })
            .optional(),
          region: z.string().min(1).default('us-east-1'),
          bucket: z
            .string()
            .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be an S3 bucket name')
            .optional(),
          /** Prepended to every object name, e.g. `slipway/sources/`. */
          prefix: z
            .string()
            .max(512)
            .regex(
              /^([A-Za-z0-9!_.*'()-]+\/)*$/,
              'must be empty or folder names each ending in "/"',
            )
            .default(''),
          /** `bucket` in the path rather than the host name, as MinIO and most local stores want. */
          forcePathStyle: z.boolean().default(false),
          /** How long a pre-signed GET URL handed to an agent stays valid. */
          presignExpiry: duration
            .refine((v) => (parseDuration(v) ?? 0) >= 1_000, 'must be at least 1s')
            .refine((v) => (parseDuration(v) ?? 0) <= 3_600_000, 'must be at most 1h')
            .default('5m'),
          /** Bound on each object-store call, retries included. */
          timeout: duration
            .refine((v) => (parseDuration(v) ?? 0) >= 100, 'must be at least 100ms')
            .default('10s'),
        })
        .prefault({}),
    })
    .prefault({})
    .refine((s) => s.backend !== 's3' || s.s3.bucket !== undefined, {
      message: 'is required when sources.backend is "s3"',
      path: ['s3', 'bucket'],
    }),
  store: z
    .strictObject({
      /** `configmap`: ConfigMaps in `kubernetes.namespace`; share links off, audit in memory. */
      backend: z.enum(['sqlite', 'memory', 'configmap']).default('sqlite'),
      path: z.string().optional(),
      /** The key sealing env values at rest (base64 of 32 bytes); else `<dataDir>/env.key`. */
      envKey: z.string().optional(),
    })
    .prefault({}),
  runtime: z
    .strictObject({
      backend: z.enum(['local', 'kubernetes']).default('local'),
      /** Idle warm sandboxes kept per template. */
      poolSize: z.number().int().min(0).max(64).default(2),
      /**
       * Apps a restart must start again (their sandbox did not survive it) started at once at
       * most, most recently used first, so that a loaded host is not stampeded.
       */
      restoreConcurrency: z.number().int().min(1).max(256).default(4),
      /** How long an app may take from inject to answering before the deploy fails. */
      startTimeout: duration.default('30s'),
      /** The general lane's install (and build) step, on top of startTimeout. */
      installTimeout: duration.default('10m'),
      /**
       * How long a redeployed app's previous sandbox stays warm, unrouted, so that a rollback to it
       * is near-instant; 0 reaps it at once.
       */
      keepPrevious: duration.default('3m'),
      /** Previous sandboxes kept warm across all apps (memory bound); the oldest goes first. */
      keepPreviousMax: z.number().int().min(0).max(256).default(8),
      memoryLimitMB: z.number().int().positive().default(512),
      pidsLimit: z.number().int().positive().default(256),
      /** CPUs' worth of time each sandbox may use (a CFS quota): 0.5, 1, 2. */
      cpu: z.number().min(0.01).max(256).default(1),
      /**
       * Where each instance's runtime dir (sockets, agent bundle) goes; it must be reachable by
       * the sandbox users. Default: /run/slipway as root, the tmp dir otherwise.
       */
      dir: z.string().min(1).optional(),
      /** Host uids sandboxes run as when the control plane is root: one per live sandbox. */
      uids: z
        .strictObject({
          first: z.number().int().min(1_000),
          count: z.number().int().min(16),
        })
        .refine((r) => r.first + r.count <= 4_294_967_294, 'the range ends past the largest uid')
        .default({ first: 2_100_000_000, count: 65_536 }),
      egress: z
        .strictObject({
          /**
           * Private, loopback or link-local hosts/addresses/CIDRs an app may still reach when its
           * allowed_hosts name them (e.g. an internal API). Empty: none.
           */
          allowPrivate: z.array(z.string()).default([]),
          /** Open connections one sandbox's egress door holds at once; more are closed on accept. */
          maxConnectionsPerSandbox: z.number().int().min(1).max(65_536).default(256),
          /** Open egress connections across all sandboxes: the control plane's fds stay its own. */
          maxConnections: z.number().int().min(1).max(1_000_000).default(4096),
          /** From accept, the time a client has to send its whole proxy request head. */
          headTimeout: duration.default('30s'),
        })
        .prefault({}),
      /** `backend: kubernetes`: sandbox pods through agent-sandbox (design.md §4). */
      kubernetes: z
        .strictObject({
          /** The agent image (Dockerfile.agent) the sandbox pods run. */
          image: z.string().min(1).default('slipway/agent:0.1.0'),
          /** Its command: node on the agent bundle the image carries. */
          command: z.array(z.string().min(1)).min(1).default(['node', '/opt/slipway/agent.mjs']),
          /** How long a claim may take to bind to a Ready sandbox before the attempt fails. */
          claimTimeout: duration.default('30s'),
          /**
           * Claims bound to a warm pod ahead of deploys, per template: a deploy takes one instead
           * of waiting for the controller to bind its claim. Each holds a pod besides the pool's.
           */
          claimAhead: z.number().int().min(0).max(16).default(1),
          /**
           * This installation's name on the cluster objects it writes (the `slipway.dev/instance`
           * label): a start adopts and deletes only claims and routes carrying it. The chart sets
           * the release name; unset, an id kept in the store (the same across restarts).
           */
          instance: z
            .string()
            .regex(
              /^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$/,
              'must be a label value: lower-case letters, digits, "." and "-", at most 63 characters',
            )
            .optional(),
          /**
           * How long a claim of this instance that no stored app runs is left alone after a start
           * (a deploy of another process may be on its way with it) before it is deleted.
           */
          orphanGrace: duration.default('60s'),
          /**
           * Several replicas of the control plane: they elect a leader with a
           * `coordination.k8s.io/v1` Lease (`<instance>-leader`); only the leader reconciles
           * claims, pools, routes and orphans, the others hand it their requests.
           */
          leaderElection: z
            .strictObject({
              enabled: z.boolean().default(false),
              /** How long a Lease not renewed stays the holder's: the longest failover. */
              leaseSeconds: z.number().int().min(2).max(300).default(15),
              /** How often the leader renews it (and a follower looks at it). */
              renewSeconds: z.number().int().min(1).max(299).default(5),
              /**
               * Where the other replicas reach this one's listener; default
               * `http://$SVC_POD_IP:<port>` (the chart sets SVC_POD_IP), else the listen address.
               */
              peerURL: z.url({ protocol: /^https?$/ }).optional(),
            })
            .refine(
              (l) => l.renewSeconds < l.leaseSeconds,
              'renewSeconds must be shorter than leaseSeconds',
            )
            .prefault({}),
          /**
           * The control plane's egress port for sandbox pods (the NetworkPolicy lets them reach
           * nothing else), and how pods dial it: `address` (`ip` or `ip:port`), else the ClusterIP
           * of `service`.
           */
          egress: z
            .strictObject({
              listen: z
                .string()
                .regex(/^.+:\d{1,5}$/, 'must be host:port')
                .default('0.0.0.0:3128'),
              address: z.string().min(1).optional(),
              service: z.string().min(1).default('slipway-egress'),
              /**
               * This control plane's own Pod (the downward API; the chart sets it): Slipway then
               * writes the endpoint of `service` itself, ready while its gate answers, so the
               * gate's Service does not follow `/readyz` (an S3 or API blip cuts no app's egress).
               */
              pod: z
                .strictObject({
                  name: z.string().min(1),
                  uid: z.string().min(1),
                  ip: z.union([z.ipv4(), z.ipv6()]),
                })
                .optional(),
            })
            .prefault({}),
          /**
           * The sandbox pods' NetworkPolicy: ingress from the control plane (labels) and the
           * gateway's namespace, egress only to the control plane's egress port.
           */
          networkPolicy: z
            .strictObject({
              enabled: z.boolean().default(true),
              controlPlaneLabels: z
                .record(z.string(), z.string())
                .default({ 'app.kubernetes.io/name': 'slipway' }),
              gatewayNamespace: z.string().min(1).optional(),
            })
            .prefault({}),
          /**
           * Who writes the SandboxTemplates, SandboxWarmPools and the enroll Secret: Slipway at
           * start (`slipway`), or a Helm release (`chart`), which names its Secret and its pools.
           */
          sandboxObjects: z
            .strictObject({
              managedBy: z.enum(['slipway', 'chart']).default('slipway'),
              enrollSecret: z.string().min(1).default('slipway-sandbox-enroll'),
              /** managedBy chart: each template's warm pool; the templates served are these. */
              pools: z
                .partialRecord(z.enum(['static', 'node', 'python']), z.string().min(1))
                .optional(),
            })
            .refine(
              (o) => o.managedBy === 'slipway' || Object.keys(o.pools ?? {}).length > 0,
              'managedBy chart needs pools: the warm pool of each template it serves (static, node, python)',
            )
            .prefault({}),
          /** The language runtimes in the agent image, as the platform info reports them. */
          versions: z
            .partialRecord(z.enum(['node', 'python']), z.string())
            .default({ node: '26', python: '3.11' }),
          /**
           * The data path: a Ready app's host routed ingress → pod by a Gateway API HTTPRoute (or
           * an Ingress), the rest to the control plane's Service; `none`: everything through the
           * control plane's router.
           */
          routes: z
            .strictObject({
              kind: z.enum(['httproute', 'ingress', 'none']).default('httproute'),
              /** The Gateway HTTPRoutes attach to. */
              gateway: z
                .strictObject({
                  name: z.string().min(1).default('slipway'),
                  namespace: z.string().min(1).optional(),
                  sectionName: z.string().min(1).optional(),
                })
                .prefault({}),
              ingressClassName: z.string().min(1).optional(),
              /** The control plane's Service: hosts of apps that are not Ready go there. */
              controlPlaneService: z
                .strictObject({
                  name: z.string().min(1).default('slipway'),
                  port: z.number().int().min(1).max(65_535).default(80),
                })
                .prefault({}),
            })
            .prefault({}),
        })
        .refine((k) => !k.leaderElection.enabled || k.instance !== undefined, {
          message:
            'enabled needs runtime.kubernetes.instance: the replicas find their Lease by its name',
          path: ['leaderElection'],
        })
        .prefault({}),
    })
    .prefault({}),
});

export type Config = z.infer<typeof configSchema>;
export type ApiKeyEntry = z.infer<typeof apiKeyEntry>;

/** Milliseconds of a duration that the schema has already validated. */
export function durationMs(text: string): number {
  return parseDuration(text) ?? 0;
}
