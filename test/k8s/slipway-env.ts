// What Slipway on the test cluster needs around it: the cluster, a test node running Slipway's
// sandbox pods in the namespace, and an S3 bucket in moto for the sources (pods pull pre-signed
// URLs). Shared by the suites that run a real Slipway on Kubernetes and by the bench row.
import { startMoto, type Moto } from '../support/moto.js';
import {
  startCluster,
  startTestNode,
  type AgentProcess,
  type Cluster,
  type Pod,
  type StartClusterOptions,
  type TestNode,
} from './cluster.js';
import { imagePodCommand, type ImagePodOptions } from './image-pod.js';
import { bundlePodAgent, podAgentCommand } from './pod-agent.js';

export interface SlipwayEnv {
  cluster: Cluster;
  node: TestNode;
  moto: Moto;
  namespace: string;
  bucket: string;
  /** Config for a Slipway in this env (merge the rest over it). */
  config(): {
    kubernetes: { namespace: string; kubeconfig: string };
    sources: { backend: 's3'; s3: { endpoint: string; bucket: string; forcePathStyle: true } };
  };
  stop(): Promise<void>;
}

export interface SlipwayEnvOptions {
  cluster?: StartClusterOptions;
  /** What the node runs for a pod that is not a sandbox (e.g. Slipway's own); undefined: the agent. */
  otherPod?: (pod: Pod, ip: string) => AgentProcess | undefined;
  /**
   * The test node runs the pods from their images' root filesystems (image-pod.ts) instead of the
   * host's, with the pod agent bundled from the checkout.
   */
  images?: ImagePodOptions;
  /** Pods that get a network namespace of their own on the test node (node.ts). */
  ownNetwork?: (pod: Pod) => boolean;
}

export async function startSlipwayEnv(
  namespace: string,
  bucket: string,
  opts: SlipwayEnvOptions = {},
): Promise<SlipwayEnv> {
  const moto = await startMoto();
  await moto.createBucket(bucket);
  const cluster = await startCluster(opts.cluster);
  const agent = opts.images
    ? imagePodCommand({ ...opts.images, volumes: { api: cluster.api, dir: cluster.dir } })
    : podAgentCommand(await bundlePodAgent());
  const node = await startTestNode({
    cluster,
    namespace,
    agentCommand: (pod, ip, env) => opts.otherPod?.(pod, ip) ?? agent(pod, ip, env),
    ...(opts.ownNetwork ? { ownNetwork: opts.ownNetwork } : {}),
  });
  await cluster.api.must('POST', '/api/v1/namespaces', { metadata: { name: namespace } });
  return {
    cluster,
    node,
    moto,
    namespace,
    bucket,
    config: () => ({
      kubernetes: { namespace, kubeconfig: cluster.kubeconfig },
      sources: { backend: 's3', s3: { endpoint: moto.endpoint, bucket, forcePathStyle: true } },
    }),
    async stop() {
      await node.stop();
      await cluster.stop();
      await moto.stop();
    },
  };
}
