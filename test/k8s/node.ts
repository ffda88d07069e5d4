// The test "node": a tiny stand-in for a kubelet (and for the scheduler), since no kubelet can run
// containers on these machines. It is the only simulated part of the test cluster.
//
// What it does, all through the real API server:
//   - registers a Node object (default "test-node") with capacity and a Ready condition;
//   - watches pods (list, then watch from the list's resourceVersion with bookmarks; re-lists on
//     410 Gone or when a watch ends) that match an optional namespace / label selector;
//   - binds each unbound pod to its node through the pods/binding subresource (the scheduler's job);
//   - gives each pod its own address 198.18.X.N, added to the loopback device of the suites' own
//     network namespace (test/k8s/netns.sh: never the host's) (198.18.0.0/15 is reserved for
//     benchmarks and never routed; not 127/8, whose addresses the API server refuses in
//     EndpointSlices, as it would from a real node; adding them needs root, as CI runs), and starts
//     agentCommand(pod) as a local process with the pod's first container's env resolved
//     (value with `$(VAR)` expansion, secretKeyRef, configMapKeyRef, fieldRef), the namespace's
//     service links (`<NAME>_SERVICE_HOST/_PORT`, unless enableServiceLinks is false) and POD_IP;
//   - runs the container's readinessProbe if it has an httpGet one (against the pod's IP), then writes
//     the pod status: phase Running, podIP(s), conditions Ready/ContainersReady=True; and keeps
//     probing every periodSeconds, turning Ready False after failureThreshold failures in a row
//     and True again on the next success;
//   - when the process exits: restarts it (restartPolicy Always / OnFailure) or ends the pod
//     (Succeeded / Failed), as a kubelet would, without backoff beyond one second;
//   - when a pod is being deleted: kills its process (SIGTERM, then SIGKILL after the pod's grace
//     period, at most 5 s) and completes the deletion (DELETE with gracePeriodSeconds 0), which is
//     what a kubelet does for a pod bound to it.
// It does not pull images or run init/sidecar containers; what agentCommand returns decides how a
// pod runs (image-pod.ts: from its image's rootfs, with its user, read-only root, volumes and
// memory limit). Pods `ownNetwork` picks get a network namespace of their own (pod-network.ts),
// `KUBERNETES_SERVICE_HOST/PORT` and a route to the API server through the `kubernetes` Service's
// ClusterIP (tcp-forward.ts, the node's kube-proxy for it); the others share the suites' namespace.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import type { Api, Cluster, K8sObject } from './cluster.js';
import { startPodNetwork, type PodNetwork, type PodSandbox } from './pod-network.js';
import { forwardTcp, type TcpForward } from './tcp-forward.js';

export type PodSpecLite = {
  nodeName?: string;
  enableServiceLinks?: boolean;
  restartPolicy?: string;
  terminationGracePeriodSeconds?: number;
  containers?: ContainerLite[];
};
type EnvVarLite = {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string; optional?: boolean };
    configMapKeyRef?: { name: string; key: string; optional?: boolean };
    fieldRef?: { fieldPath: string };
  };
};
type ContainerLite = {
  name: string;
  env?: EnvVarLite[];
  ports?: { containerPort: number; name?: string }[];
  readinessProbe?: {
    httpGet?: { path?: string; port: number | string };
    periodSeconds?: number;
    failureThreshold?: number;
  };
};

export type Pod = K8sObject & { spec?: PodSpecLite };

export type AgentProcess = {
  command: string;
  args?: string[];
  /** Added to the pod's env (which the node resolves from the first container's env). */
  env?: Record<string, string>;
  /** Called once the process has exited (e.g. to remove its cgroup). */
  cleanup?: () => void;
};

export type TestNodeOptions = {
  cluster: Pick<Cluster, 'api' | 'dir' | 'server'>;
  /**
   * What to run for a pod: its "containers". ip is the pod's own 198.18.X.N, env the first
   * container's env as the node resolved it.
   */
  agentCommand: (
    pod: Pod,
    ip: string,
    env: Record<string, string>,
  ) => AgentProcess | Promise<AgentProcess>;
  nodeName?: string;
  /** Only pods in this namespace (default: all). */
  namespace?: string;
  /** Only pods matching this label selector (default: all). */
  labelSelector?: string;
  /** Server-side watch timeout; the node re-watches from the last resourceVersion (default 300). */
  watchTimeoutSeconds?: number;
  /**
   * Pods that get a network namespace of their own (a veth pair to the suites' namespace), as a
   * CNI plugin gives every pod; the rest share the suites' namespace, each on its own address.
   * Default: none, as before (see README: the sandbox pods' setup relies on the shared one).
   */
  ownNetwork?: (pod: Pod) => boolean;
};

export type TestNode = {
  nodeName: string;
  /** The node's address as pods in a namespace of their own reach it (with `ownNetwork` only). */
  gateway: string | undefined;
  /** Pods the node is running now, by namespace/name. */
  running(): Map<string, { ip: string; pid: number | undefined }>;
  stop(): Promise<void>;
};

type Running = {
  pod: Pod;
  ip: string;
  child?: ChildProcess;
  restarts: number;
  stopping: boolean;
  ended: boolean;
  /** Its own network namespace (ownNetwork), made at its first start, kept across restarts. */
  net?: PodSandbox;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function probe(ip: string, port: number, path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = httpRequest({ host: ip, port, path, timeout: 1000 }, (res) => {
      res.resume();
      const s = res.statusCode ?? 500;
      resolve(s >= 200 && s < 400);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

export async function startTestNode(opts: TestNodeOptions): Promise<TestNode> {
  const api: Api = opts.cluster.api;
  const nodeName = opts.nodeName ?? 'test-node';
  const logDir = join(opts.cluster.dir, 'logs', 'pods');
  mkdirSync(logDir, { recursive: true });
  const pods = new Map<string, Running>(); // by pod uid
  // A random third octet per node: test processes running side by side get different addresses.
  let nextIp = (Math.floor(Math.random() * 200) << 8) + 2;
  const gateway = opts.ownNetwork ? `198.18.${(nextIp >> 8) & 255}.1` : undefined;
  const added: string[] = [];
  let stopped = false;
  const abort = new AbortController();
  const key = (p: Pod) => `${p.metadata?.namespace}/${p.metadata?.name}`;
  const podPath = (p: Pod) =>
    `/api/v1/namespaces/${p.metadata?.namespace}/pods/${p.metadata?.name}`;
  /** The next pod address; on lo unless the pod has a namespace of its own (its eth0 has it). */
  const allocIp = (onLo: boolean): string => {
    for (;;) {
      const n = nextIp++;
      if ((n & 255) === 0 || (n & 255) === 255 || (n & 255) === 1) continue;
      const ip = `198.${18 + ((n >> 16) & 1)}.${(n >> 8) & 255}.${n & 255}`;
      if (!onLo) return ip;
      try {
        execFileSync('ip', ['addr', 'add', `${ip}/32`, 'dev', 'lo'], { stdio: 'pipe' });
      } catch (err) {
        // Taken by another test process on this machine: the next one.
        // (iproute2 says "File exists" or, in newer versions, "Address already assigned").
        if (/File exists|already assigned/.test(String((err as { stderr?: unknown }).stderr))) {
          continue;
        }
        throw new Error(
          `test node: cannot add pod address ${ip} to lo (root needed): ${String(err)}`,
        );
      }
      added.push(ip);
      return ip;
    }
  };

  // The Node object, Ready, with room for many pods.
  const now = () => new Date().toISOString();
  const nodeRes = await api.post('/api/v1/nodes', {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: nodeName, labels: { 'kubernetes.io/hostname': nodeName } },
  });
  if (nodeRes.status !== 201 && nodeRes.status !== 409) {
    throw new Error(`create node → ${nodeRes.status}: ${JSON.stringify(nodeRes.body)}`);
  }
  const capacity = { cpu: '64', memory: '256Gi', pods: '1000' };
  await api.must(
    'PATCH',
    `/api/v1/nodes/${nodeName}/status`,
    {
      status: {
        capacity,
        allocatable: capacity,
        addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            message: 'slipway test node',
            lastHeartbeatTime: now(),
            lastTransitionTime: now(),
          },
        ],
        nodeInfo: { kubeletVersion: 'slipway-test-node', containerRuntimeVersion: 'process://' },
      },
    },
    'application/merge-patch+json',
  );

  /** What a kubelet gives a pod with service links on: `<NAME>_SERVICE_HOST/_PORT` per Service. */
  async function serviceLinks(ns: string): Promise<Record<string, string>> {
    type Svc = {
      metadata: { name: string };
      spec: { clusterIP?: string; ports?: { name?: string; port: number }[] };
    };
    const res = await api.get<{ items: Svc[] }>(`/api/v1/namespaces/${ns}/services`);
    const env: Record<string, string> = {};
    for (const svc of res.status === 200 ? res.body.items : []) {
      const ip = svc.spec.clusterIP;
      if (!ip || ip === 'None') continue;
      const name = svc.metadata.name.toUpperCase().replace(/-/g, '_');
      env[`${name}_SERVICE_HOST`] = ip;
      const [first] = svc.spec.ports ?? [];
      if (first) env[`${name}_SERVICE_PORT`] = String(first.port);
      for (const p of svc.spec.ports ?? []) {
        if (p.name)
          env[`${name}_SERVICE_PORT_${p.name.toUpperCase().replace(/-/g, '_')}`] = String(p.port);
      }
    }
    return env;
  }

  /** The kubelet's `$(VAR)` expansion: a defined variable's value, `$$` a literal `$`. */
  function expand(value: string, env: Record<string, string>): string {
    return value.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (whole, name?: string) =>
      name === undefined ? '$' : (env[name] ?? whole),
    );
  }

  async function resolveEnv(pod: Pod, c: ContainerLite | undefined, ip: string, own: boolean) {
    const ns = pod.metadata?.namespace ?? 'default';
    const links = {
      ...(pod.spec?.enableServiceLinks === false ? {} : await serviceLinks(ns)),
      ...(own ? kubeServiceEnv : {}),
    };
    const env: Record<string, string> = {};
    const lookup = (): Record<string, string> => ({ ...links, ...env });
    for (const e of c?.env ?? []) {
      if (e.value !== undefined) {
        env[e.name] = expand(e.value, lookup());
        continue;
      }
      const ref = e.valueFrom;
      if (ref?.secretKeyRef || ref?.configMapKeyRef) {
        const r = (ref.secretKeyRef ?? ref.configMapKeyRef)!;
        const kind = ref.secretKeyRef ? 'secrets' : 'configmaps';
        const res = await api.get<{ data?: Record<string, string> }>(
          `/api/v1/namespaces/${ns}/${kind}/${r.name}`,
        );
        const raw = res.status === 200 ? res.body.data?.[r.key] : undefined;
        if (raw === undefined) {
          if (r.optional) continue;
          throw new Error(`env ${e.name}: ${kind}/${r.name} key ${r.key} not found`);
        }
        env[e.name] = ref.secretKeyRef ? Buffer.from(raw, 'base64').toString('utf8') : raw;
      } else if (ref?.fieldRef) {
        const f = ref.fieldRef.fieldPath;
        const m = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(f);
        const v: string | undefined = m
          ? pod.metadata?.[m[1] as 'labels' | 'annotations']?.[m[2]!]
          : (
              {
                'metadata.name': pod.metadata?.name,
                'metadata.namespace': pod.metadata?.namespace,
                'metadata.uid': pod.metadata?.uid,
                'spec.nodeName': nodeName,
                'status.podIP': ip,
                'status.hostIP': '127.0.0.1',
              } as Record<string, string | undefined>
            )[f];
        if (v !== undefined) env[e.name] = v;
      }
    }
    env.POD_IP ??= ip;
    return { ...links, ...env };
  }

  async function writeStatus(r: Running, ready: boolean, phase = 'Running', exitCode?: number) {
    const t = now();
    const cond = (type: string, ok: boolean) => ({
      type,
      status: ok ? 'True' : 'False',
      lastTransitionTime: t,
    });
    const containers = r.pod.spec?.containers ?? [];
    const status = {
      phase,
      hostIP: '127.0.0.1',
      hostIPs: [{ ip: '127.0.0.1' }],
      podIP: r.ip,
      podIPs: [{ ip: r.ip }],
      startTime: t,
      conditions: [
        cond('PodScheduled', true),
        cond('Initialized', true),
        cond('ContainersReady', ready),
        cond('Ready', ready),
      ],
      containerStatuses: containers.map((c) => ({
        name: c.name,
        image: 'process',
        imageID: 'process://',
        ready,
        started: phase === 'Running',
        restartCount: r.restarts,
        state:
          phase === 'Running'
            ? { running: { startedAt: t } }
            : {
                terminated: {
                  exitCode: exitCode ?? 0,
                  finishedAt: t,
                  reason: phase === 'Succeeded' ? 'Completed' : 'Error',
                },
              },
      })),
    };
    const res = await api.patch(`${podPath(r.pod)}/status`, { status });
    if (res.status !== 200 && res.status !== 404) {
      throw new Error(
        `pod status ${key(r.pod)} → ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`,
      );
    }
  }

  async function launch(r: Running) {
    const c = r.pod.spec?.containers?.[0];
    const own = opts.ownNetwork?.(r.pod) ? network : undefined;
    if (own && !r.net) r.net = await own.attach(r.ip);
    const env = await resolveEnv(r.pod, c, r.ip, own !== undefined);
    const cmd = await opts.agentCommand(r.pod, r.ip, env);
    // The process joins the pod's namespace, as a runtime starts containers in the pause's.
    const [command, args] = r.net
      ? ['nsenter', [`--net=${r.net.netns}`, '--', cmd.command, ...(cmd.args ?? [])]]
      : [cmd.command, cmd.args ?? []];
    const log = createWriteStream(
      join(logDir, `${r.pod.metadata?.namespace}_${r.pod.metadata?.name}.log`),
      {
        flags: 'a',
      },
    );
    const child = spawn(command, args, {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env, ...cmd.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    r.child = child;
    child.on('exit', (code) => {
      cmd.cleanup?.();
      if (r.stopping || stopped) return;
      const policy = r.pod.spec?.restartPolicy ?? 'Always';
      const again = policy === 'Always' || (policy === 'OnFailure' && code !== 0);
      if (again) {
        r.restarts++;
        void writeStatus(r, false)
          .then(() => sleep(1000))
          .then(() => (r.stopping || stopped ? undefined : start(r)))
          .catch(() => undefined);
      } else {
        r.ended = true;
        r.net?.detach();
        void writeStatus(r, false, code === 0 ? 'Succeeded' : 'Failed', code ?? 137).catch(
          () => undefined,
        );
      }
    });
    // Readiness: the container's httpGet probe against the pod's address, else at once.
    const hg = c?.readinessProbe?.httpGet;
    if (hg) {
      const port =
        typeof hg.port === 'number'
          ? hg.port
          : (c?.ports?.find((p) => p.name === hg.port)?.containerPort ?? Number(hg.port));
      while (!r.stopping && !stopped && child.exitCode === null) {
        if (await probe(r.ip, port, hg.path ?? '/')) break;
        await sleep(50);
      }
      if (r.stopping || stopped || child.exitCode !== null) return;
      await writeStatus(r, true);
      void keepProbing(r, child, () => probe(r.ip, port, hg.path ?? '/'));
      return;
    }
    await writeStatus(r, true);
  }

  /**
   * As a kubelet does after the first Ready: the probe every periodSeconds (default 10),
   * failureThreshold (default 3) failures in a row → not Ready, one success → Ready again.
   */
  async function keepProbing(r: Running, child: ChildProcess, check: () => Promise<boolean>) {
    const spec = r.pod.spec?.containers?.[0]?.readinessProbe;
    const periodMs = (spec?.periodSeconds ?? 10) * 1000;
    const threshold = spec?.failureThreshold ?? 3;
    let ready = true;
    let failures = 0;
    const live = () => !r.stopping && !stopped && r.child === child && child.exitCode === null;
    while (live()) {
      const tick = sleep(periodMs);
      const ok = await check();
      if (!live()) return;
      failures = ok ? 0 : failures + 1;
      const next: boolean = ok || (ready && failures < threshold);
      if (next !== ready) {
        ready = next;
        await writeStatus(r, ready).catch((err: unknown) =>
          process.stderr.write(`[test-node] ${key(r.pod)}: ${String(err)}\n`),
        );
      }
      await tick;
    }
  }

  async function start(r: Running) {
    try {
      await launch(r);
    } catch (err) {
      process.stderr.write(`[test-node] ${key(r.pod)}: ${String(err)}\n`);
    }
  }

  async function kill(r: Running) {
    r.stopping = true;
    const child = r.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const grace = Math.min((r.pod.spec?.terminationGracePeriodSeconds ?? 30) * 1000, 5000);
      const exited = new Promise((res) => child.once('exit', res));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), grace);
      await exited;
      clearTimeout(t);
    }
    r.net?.detach();
  }

  async function onPod(type: string, pod: Pod) {
    const uid = pod.metadata?.uid ?? '';
    let r = pods.get(uid);
    if (type === 'DELETED') {
      if (r) {
        pods.delete(uid);
        await kill(r);
      }
      return;
    }
    if (pod.metadata?.deletionTimestamp) {
      const boundHere = pod.spec?.nodeName === nodeName;
      if (r) {
        pods.delete(uid);
        await kill(r);
      }
      if (boundHere) {
        // The kubelet's last word: the containers are gone, remove the object now.
        await api.delete(podPath(pod), {
          apiVersion: 'v1',
          kind: 'DeleteOptions',
          gracePeriodSeconds: 0,
          preconditions: { uid },
        });
      }
      return;
    }
    if (r) {
      r.pod = pod;
      return;
    }
    const phase = pod.status?.phase as string | undefined;
    if (phase === 'Succeeded' || phase === 'Failed') return;
    if (pod.spec?.nodeName && pod.spec.nodeName !== nodeName) return;
    r = {
      pod,
      ip: allocIp(!(network && opts.ownNetwork?.(pod))),
      restarts: 0,
      stopping: false,
      ended: false,
    };
    pods.set(uid, r);
    if (!pod.spec?.nodeName) {
      const res = await api.post(`${podPath(pod)}/binding`, {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name: pod.metadata?.name, uid },
        target: { apiVersion: 'v1', kind: 'Node', name: nodeName },
      });
      if (res.status !== 201) {
        pods.delete(uid);
        if (res.status !== 404 && res.status !== 409) {
          process.stderr.write(`[test-node] bind ${key(pod)} → ${res.status}\n`);
        }
        return;
      }
      pod.spec = { ...pod.spec, nodeName };
    }
    void start(r);
  }

  // Pods with a namespace of their own reach the API server as in a cluster: through the
  // `kubernetes` Service's ClusterIP, which the node routes to it (127.0.0.1 is the pod's own).
  let network: PodNetwork | undefined;
  let kubeForward: TcpForward | undefined;
  let kubeServiceEnv: Record<string, string> = {};
  if (gateway) {
    type Svc = { spec: { clusterIP: string; ports: { port: number }[] } };
    const svc = await api.must<Svc>('GET', '/api/v1/namespaces/default/services/kubernetes');
    const port = svc.spec.ports[0]?.port ?? 443;
    network = startPodNetwork(gateway);
    kubeForward = await forwardTcp(
      { host: svc.spec.clusterIP, port },
      { host: '127.0.0.1', port: Number(new URL(opts.cluster.server).port) },
    );
    kubeServiceEnv = {
      KUBERNETES_SERVICE_HOST: svc.spec.clusterIP,
      KUBERNETES_SERVICE_PORT: String(port),
      KUBERNETES_SERVICE_PORT_HTTPS: String(port),
    };
  }

  // Events are handled one at a time, in order.
  let chain: Promise<void> = Promise.resolve();
  const enqueue = (type: string, pod: Pod) => {
    chain = chain
      .then(() => onPod(type, pod))
      .catch((err) => {
        process.stderr.write(`[test-node] ${type} ${key(pod)}: ${String(err)}\n`);
      });
  };

  const base = opts.namespace ? `/api/v1/namespaces/${opts.namespace}/pods` : '/api/v1/pods';
  const sel = opts.labelSelector ? `labelSelector=${encodeURIComponent(opts.labelSelector)}&` : '';

  async function listAndWatch() {
    while (!stopped) {
      try {
        const list = await api.must<{ metadata: { resourceVersion: string }; items: Pod[] }>(
          'GET',
          `${base}?${sel}`,
        );
        const seen = new Set(list.items.map((p) => p.metadata?.uid));
        for (const [uid, r] of pods) if (!seen.has(uid)) enqueue('DELETED', r.pod);
        for (const p of list.items) enqueue('MODIFIED', p);
        let rv = list.metadata.resourceVersion;
        // Watch until the server ends it or says the resourceVersion is too old (410).
        for (;;) {
          const res = await api.raw(
            'GET',
            `${base}?${sel}watch=1&allowWatchBookmarks=true&resourceVersion=${rv}&timeoutSeconds=${opts.watchTimeoutSeconds ?? 300}`,
            undefined,
            undefined,
            abort.signal,
          );
          if (res.statusCode === 410) break;
          if (res.statusCode !== 200) throw new Error(`watch pods → ${res.statusCode}`);
          let buf = '';
          let gone = false;
          for await (const chunk of res) {
            buf += (chunk as Buffer).toString('utf8');
            let nl: number;
            while ((nl = buf.indexOf('\n')) >= 0) {
              const line = buf.slice(0, nl);
              buf = buf.slice(nl + 1);
              if (!line.trim()) continue;
              const ev = JSON.parse(line) as { type: string; object: Pod & { code?: number } };
              if (ev.type === 'ERROR') {
                gone = true; // 410 Gone (expired) or another error: re-list
                continue;
              }
              rv = ev.object.metadata?.resourceVersion ?? rv;
              if (ev.type !== 'BOOKMARK') enqueue(ev.type, ev.object);
            }
          }
          if (gone || stopped) break;
        }
      } catch (err) {
        if (stopped) return;
        process.stderr.write(`[test-node] watch: ${String(err)}; re-listing\n`);
        await sleep(500);
      }
    }
  }
  const loop = listAndWatch();

  return {
    nodeName,
    gateway,
    running() {
      const m = new Map<string, { ip: string; pid: number | undefined }>();
      for (const r of pods.values()) {
        if (!r.ended) m.set(key(r.pod), { ip: r.ip, pid: r.child?.pid });
      }
      return m;
    },
    async stop() {
      stopped = true;
      abort.abort();
      await loop.catch(() => undefined);
      await chain.catch(() => undefined);
      await Promise.all([...pods.values()].map((r) => kill(r)));
      pods.clear();
      network?.stop();
      await kubeForward?.stop();
      for (const ip of added.splice(0)) {
        try {
          execFileSync('ip', ['addr', 'del', `${ip}/32`, 'dev', 'lo'], { stdio: 'pipe' });
        } catch (err) {
          process.stderr.write(`test node: pod address ${ip} not removed: ${String(err)}\n`);
        }
      }
    },
  };
}
