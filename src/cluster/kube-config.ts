import { KubeConfig } from '@kubernetes/client-node';
import type { Config } from '../config/schema.js';

/**
 * The cluster credentials for the kubernetes runtime and the configmap store: the configured
 * kubeconfig file, else the pod's service account inside a cluster, else the default kubeconfig.
 */
export function loadKubeConfig(config: Pick<Config, 'kubernetes'>): KubeConfig {
  const kc = new KubeConfig();
  if (config.kubernetes.kubeconfig) kc.loadFromFile(config.kubernetes.kubeconfig);
  else if (process.env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
  else kc.loadFromDefault();
  return kc;
}
