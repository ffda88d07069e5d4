// A network namespace per pod, as a CNI ptp plugin gives one, for the pods the test node is told
// to isolate (node.ts, `ownNetwork`). Each pod's namespace is held by a pause process (`unshare
// --net` running `sleep`, as a pause container holds a pod's) and joined to the suites' namespace
// (netns.sh) by a veth pair: `eth0` in the pod's namespace with the pod's IP/32, `lo` up, a route to
// the node's gateway address on that link and the default route through it; on the node's side the
// other end and a /32 route to the pod's IP. The gateway (198.18.X.1, on the suites' lo) answers
// the pod's ARP as a local address does, and with ip_forward on (per namespace: the suites' own)
// pods reach each other. Every address of the suites' namespace but 127/8 is reachable from a pod
// this way: the other pods' 198.18.X.N, the ClusterIPs suites put on lo, the gateway itself.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readlinkSync, writeFileSync } from 'node:fs';
import { addAddress } from './tcp-forward.js';

export type PodSandbox = {
  /** The pod's network namespace, for `nsenter --net=`. */
  netns: string;
  /** Ends the pause process and removes the veth pair (and with it the pod's route). */
  detach(): void;
};

export type PodNetwork = {
  gateway: string;
  attach(ip: string): Promise<PodSandbox>;
  stop(): void;
};

const sh = (args: string[], input?: string) =>
  execFileSync(args[0]!, args.slice(1), { stdio: 'pipe', ...(input ? { input } : {}) });

/** The namespace of the pause process once `unshare` has made it (before, it is still ours). */
async function netnsOf(holder: ChildProcess): Promise<string> {
  const own = readlinkSync('/proc/self/ns/net');
  const path = `/proc/${holder.pid}/ns/net`;
  for (let i = 0; i < 500; i++) {
    if (holder.exitCode !== null) throw new Error(`pod network: unshare exited ${holder.exitCode}`);
    if (readlinkSync(path) !== own) return path;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('pod network: unshare --net made no namespace within 5 s');
}

export function startPodNetwork(gateway: string): PodNetwork {
  const ours = addAddress(gateway);
  writeFileSync('/proc/sys/net/ipv4/ip_forward', '1');
  const sandboxes = new Set<PodSandbox>();
  return {
    gateway,
    async attach(ip) {
      const holder = spawn('unshare', ['--net', '--', 'sleep', 'infinity'], { stdio: 'ignore' });
      const host = `swp-${ip.split('.').slice(2).join('-')}`;
      const detach = () => {
        sandboxes.delete(sandbox);
        holder.kill('SIGKILL');
        try {
          sh(['ip', 'link', 'del', host]);
        } catch (err) {
          // Gone with the namespace already when the pause process went first.
          if (!/Cannot find device/.test(String((err as { stderr?: unknown }).stderr))) throw err;
        }
      };
      const sandbox: PodSandbox = { netns: '', detach };
      sandboxes.add(sandbox);
      try {
        sandbox.netns = await netnsOf(holder);
        sh([
          'ip',
          'link',
          'add',
          host,
          'type',
          'veth',
          'peer',
          'name',
          'eth0',
          'netns',
          String(holder.pid),
        ]);
        sh(['ip', 'link', 'set', host, 'up']);
        sh(['ip', 'route', 'add', `${ip}/32`, 'dev', host]);
        sh(
          ['nsenter', `--net=${sandbox.netns}`, 'ip', '-batch', '-'],
          [
            'link set lo up',
            `addr add ${ip}/32 dev eth0`,
            'link set eth0 up',
            `route add ${gateway}/32 dev eth0`,
            `route add default via ${gateway} dev eth0`,
          ].join('\n'),
        );
      } catch (err) {
        detach();
        throw new Error(
          `pod network for ${ip}: ${String((err as { stderr?: unknown }).stderr ?? err)}`,
        );
      }
      return sandbox;
    },
    stop() {
      for (const s of [...sandboxes]) s.detach();
      if (ours) sh(['ip', 'addr', 'del', `${gateway}/32`, 'dev', 'lo']);
    },
  };
}
